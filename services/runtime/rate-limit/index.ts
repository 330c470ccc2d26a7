// Rate limits shared by every instance through PostgreSQL: a table per module and a limiter over it.
export { rateLimitTable, type RateLimitTable } from "./rate-limit-table.js";
export {
  createRateLimiter,
  digestKey,
  type RateLimitDecision,
  type RateLimiter,
  type RateLimiterOptions,
  type RateLimitRule,
  windowOf,
} from "./rate-limiter.js";
export {
  createSlidingWindowLimiter,
  type SlidingWindowDecision,
  type SlidingWindowLimiter,
  type SlidingWindowOptions,
  type SlidingWindowRule,
  type SlidingWindowTable,
  slidingWindowTable,
} from "./sliding-window.js";
export {
  RATE_LIMIT_HEADERS,
  requestLimitInterceptor,
  type RequestLimitOptions,
  type RequestLimitSettings,
  type RefusalReport,
} from "./request-limit-interceptor.js";
