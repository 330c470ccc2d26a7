// Picks the error document and content type for a style.
import type { ErrorStyleName } from "../style.js";
import type { HttpError } from "./http-error.js";
import { ERROR_MESSAGE_CONTENT_TYPE, toErrorMessage } from "./to-error-message.js";
import { PROBLEM_CONTENT_TYPE, toProblem } from "./to-problem.js";
import { toReasonPhrase } from "./to-reason-phrase.js";

export interface RenderedError {
  readonly contentType: string;
  readonly document: object;
}

export function renderError(error: HttpError, style: ErrorStyleName): RenderedError {
  switch (style) {
    case "error-message":
      return { contentType: ERROR_MESSAGE_CONTENT_TYPE, document: toErrorMessage(error) };
    case "reason-phrase":
      return { contentType: ERROR_MESSAGE_CONTENT_TYPE, document: toReasonPhrase(error) };
    default:
      return { contentType: PROBLEM_CONTENT_TYPE, document: toProblem(error) };
  }
}
