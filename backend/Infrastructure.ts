import { Streams } from "./contract/Streams.ts"
import { Nats } from "./platform/Nats.ts"
import { platformLayer } from "./platform/Platform.ts"
import { DocumentBuckets } from "./policies/Config.ts"

/**
 * The platform on the contract's streams and the policy documents' bucket: what the service, the CLI and the tests
 * run on.
 */
export const PlatformLayer = platformLayer(Streams, DocumentBuckets)

/** NATS alone, on the contract's streams (for `tail`, which needs no database). */
export const NatsLayer = Nats.layerOn(Streams)
