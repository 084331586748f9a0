import { Layer, Logger, type LogLevel, References } from "effect"

/**
 * Every line the service logs at `level` and above, as production writes them (JSON), kept in `lines`; provide
 * `layer` (e.g. as `authService({ references })`) so the service and the test both log through it.
 */
export const captureLogs = (level: LogLevel.LogLevel) => {
  const lines: Array<string> = []
  const layer = Layer.merge(
    Logger.layer([Logger.map(Logger.formatJson, (line) => void lines.push(line))]),
    Layer.succeed(References.MinimumLogLevel, level),
  )
  return { lines, layer }
}
