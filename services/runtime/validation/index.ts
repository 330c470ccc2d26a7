export { missingRequiredFields, requiredFieldsInterceptor } from "./required-fields.js";
export { invalidTextFields, textIntegrityInterceptor, textProblem } from "./text-integrity.js";
export { maxPageSize, resolvePage, type PageRequest } from "./page-request.js";
export { checkPage } from "./page-rule.js";
