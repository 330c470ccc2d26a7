// The slice of autocannon's programmatic API the benchmark uses (the package ships no types).
declare module "autocannon" {
  import type { EventEmitter } from "node:events";

  /** One request as setupRequest sees and returns it. */
  export interface AutocannonRequest {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
  }

  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    /** Request templates, cycled; setupRequest rewrites each one before it is sent. */
    requests?: { setupRequest?: (request: AutocannonRequest) => AutocannonRequest }[];
    connections?: number;
    pipelining?: number;
    /** Seconds. */
    duration?: number;
    /** Seconds per request. */
    timeout?: number;
  }

  interface Result {
    errors: number;
    timeouts: number;
    non2xx: number;
    /** Seconds. */
    duration: number;
  }

  interface Instance extends EventEmitter, PromiseLike<Result> {
    on(event: "start", listener: () => void): this;
    /** responseTime in (fractional) milliseconds. */
    on(event: "response", listener: (client: unknown, statusCode: number, bytes: number, responseTime: number) => void): this;
  }

  function autocannon(options: Options): Instance;
  export default autocannon;
}
