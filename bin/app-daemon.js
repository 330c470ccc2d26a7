#!/usr/bin/env node
// The `app-daemon` command: runs the agent gateway as a service and installs/manages that service.
import { register } from "tsx/esm/api";

register();
const { daemonMain } = await import("../services/daemon/cli.ts");
await daemonMain(process.argv.slice(2));
