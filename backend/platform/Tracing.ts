import { Context, Duration, Effect, Layer, Option, Tracer } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import type { AppConfigShape } from "./Config.ts"

/**
 * Whether spans leave the process. Without an exporter nothing reads or writes `traceparent`, and the hot paths
 * (relay, actors, delivery) open no span of their own: a span nobody sees would only cost.
 */
export const Traced = Context.Reference<boolean>("partner-service/platform/Traced", {
  defaultValue: () => false,
})

/** The W3C `traceparent` header, as it travels in outbox rows and NATS message headers. */
export const TRACEPARENT = "traceparent"

const TRACEPARENT_FORM = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The W3C trace context naming `span` as the parent of what follows. */
export const traceparentOf = (span: Tracer.AnySpan) =>
  `00-${span.traceId.padStart(32, "0")}-${span.spanId}-${span.sampled ? "01" : "00"}`

/** The span a `traceparent` names, or undefined when it is absent or malformed (then a new trace begins). */
export const parentFrom = (traceparent: string | null | undefined): Tracer.ExternalSpan | undefined => {
  const match = traceparent === null || traceparent === undefined ? null : TRACEPARENT_FORM.exec(traceparent)
  if (match === null || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined
  return Tracer.externalSpan({
    traceId: match[1]!,
    spanId: match[2]!,
    sampled: (parseInt(match[3]!, 16) & 1) === 1,
  })
}

/** The current span's `traceparent` when spans are exported, else undefined (and nothing is looked up). */
export const currentTraceparent: Effect.Effect<string | undefined> = Effect.flatMap(Traced, (traced) =>
  traced
    ? Effect.map(Effect.option(Effect.currentSpan), (span) =>
        // An untraced stretch (`withTracerEnabled(false)`) has a span that names no trace.
        Option.isSome(span) && span.value.sampled ? traceparentOf(span.value) : undefined,
      )
    : Effect.succeed(undefined),
)

/**
 * `effect` in a span continuing the trace `traceparent` names (a new trace when it names none), for work that
 * picks up a message: the consumer side of the outbox's and NATS's propagation.
 */
export const continueTrace =
  (name: string, traceparent: string | null | undefined, options: Tracer.SpanOptionsNoTrace = {}) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) => {
    const parent = parentFrom(traceparent)
    return Effect.withSpan(effect, name, {
      ...options,
      ...(parent === undefined ? { root: true } : { parent }),
      captureStackTrace: false,
    })
  }

/**
 * The OTLP/HTTP trace exporter (effect's own) when `traceExport` is set, with `Traced` on; otherwise nothing,
 * and effect's built-in tracer keeps its spans in memory only.
 */
export const tracingLayer = (config: Pick<AppConfigShape, "traceExport">) =>
  Option.match(config.traceExport, {
    onNone: (): Layer.Layer<never> => Layer.empty,
    onSome: (target): Layer.Layer<never> =>
      Layer.mergeAll(
        OtlpTracer.layer({
          url: target.url,
          resource: { serviceName: target.serviceName },
          headers: target.headers,
          exportInterval: Duration.millis(target.exportIntervalMs),
        }).pipe(
          Layer.provide(
            target.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf,
          ),
          Layer.provide(FetchHttpClient.layer),
        ),
        Layer.succeed(Traced, true),
      ),
  })
