import { beforeEach } from "vitest"
import { unpassedWaits } from "./Streams.ts"

/** A test that fails with `eventually` waits that never passed (a timeout, most often) prints them. */
beforeEach(({ onTestFailed }) => {
  unpassedWaits()
  onTestFailed(() => {
    const waits = unpassedWaits()
    if (waits.length > 0) process.stderr.write(`waits that never passed:\n${waits.join("\n")}\n`)
  })
})
