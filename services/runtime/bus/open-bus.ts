// Picks the bus for this process: NATS JetStream when a URL is configured, the in-process bus otherwise.
import { createMemoryBus } from "./memory-bus.js";
import { connectNatsBus } from "./nats-bus.js";
import type { EventBus, OpenBusOptions } from "./types.js";

export async function openBus(options: OpenBusOptions): Promise<EventBus> {
  if (options.url) return connectNatsBus({ url: options.url, logger: options.logger, name: options.name });
  return createMemoryBus({ logger: options.logger, replayWindow: options.replayWindow });
}
