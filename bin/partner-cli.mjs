#!/usr/bin/env node
// `npx partner-cli ...`: the operator CLI through the same bootstrap as `npm run cli`, so it runs on the pinned Node.
import { runAsProcess } from "../infra/bootstrap.mjs"

runAsProcess(["cli", ...process.argv.slice(2)])
