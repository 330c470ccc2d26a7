// RFC 9457 problem details, the PROBLEM_JSON error style.
import { reasonPhrase } from "../transcoder/status-codes.js";
import type { FieldErrors, HttpError } from "./http-error.js";

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldErrors;
}

export function toProblem(error: HttpError): ProblemDocument {
  // "about:blank" tells clients the status alone carries the meaning, with its phrase as title.
  const doc: ProblemDocument = {
    type: "about:blank",
    title: reasonPhrase(error.status),
    status: error.status,
    detail: error.detail,
  };
  if (error.fieldErrors && Object.keys(error.fieldErrors).length > 0) doc.errors = error.fieldErrors;
  return doc;
}
