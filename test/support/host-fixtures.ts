// Shared by the service host's tests (services/runtime/host): a fake AssetService (the real one lives in services/tracking),
// a logger that remembers its lines, and a host started on an ephemeral port.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { AssetService } from "../../gen/tracking/v1/asset_pb.js";
import {
  buildRoutes,
  definePartialService,
  getRequestId,
  type Logger,
  type ServiceHost,
  type ServiceRoutes,
  startServiceHost,
} from "../../services/runtime/host/index.js";

export interface LogLine {
  level: "debug" | "info" | "warn" | "error";
  obj: Record<string, unknown>;
  msg: string | undefined;
}

export function memoryLogger(lines: LogLine[] = [], bindings: Record<string, unknown> = {}): Logger & { lines: LogLine[] } {
  const write = (level: LogLine["level"]) => (obj: object, msg?: string) => {
    lines.push({ level, obj: { ...bindings, ...obj }, msg });
  };
  return {
    lines,
    debug: write("debug"),
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
    child: (more) => memoryLogger(lines, { ...bindings, ...more }),
  };
}

export const KNOWN_ASSET_ID = "7d1f6c3e-0000-4000-8000-000000000001";
export const FAILING_ASSET_ID = "boom";
export const SECRET_DETAIL = "connection refused by db.internal:5432 (password=hunter2)";

/** Request ids the fake handlers saw, in call order. */
export function fakeAssetService(seenRequestIds: (string | undefined)[] = []) {
  return definePartialService(AssetService, {
    async getAsset(req) {
      seenRequestIds.push(getRequestId());
      // An await between entry and use: the context must survive it.
      await new Promise((resolve) => setImmediate(resolve));
      seenRequestIds.push(getRequestId());
      if (req.id === FAILING_ASSET_ID) {
        throw new Error(SECRET_DETAIL);
      }
      if (req.id !== KNOWN_ASSET_ID) {
        throw new ConnectError(`asset ${req.id} not found`, Code.NotFound);
      }
      return {
        id: req.id,
        name: "Van 7",
        category: "vehicle",
        speedThresholdKmh: 90,
        createdAt: timestampFromDate(new Date("2024-05-01T10:00:00Z")),
      };
    },
  });
}

export interface Fixture {
  host: ServiceHost;
  routes: ServiceRoutes;
  url: string;
  logger: ReturnType<typeof memoryLogger>;
  seenRequestIds: (string | undefined)[];
}

export async function startFixture(interceptors: (logger: Logger) => Interceptor[] = () => []): Promise<Fixture> {
  const logger = memoryLogger();
  const seenRequestIds: (string | undefined)[] = [];
  const routes = buildRoutes({
    services: [fakeAssetService(seenRequestIds)],
    interceptors: interceptors(logger),
  });
  const host = await startServiceHost({ host: "127.0.0.1", port: 0, routes, logger, shutdownGraceMs: 2_000 });
  return { host, routes, url: `http://127.0.0.1:${host.port}`, logger, seenRequestIds };
}
