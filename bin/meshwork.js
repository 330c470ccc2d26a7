#!/usr/bin/env node
// The `meshwork` command. TypeScript sources run through tsx's loader, so there is no build step.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../services/cli.ts");
await main(process.argv.slice(2));
