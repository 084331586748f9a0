import { Layer } from "effect"
import { actorLayer } from "../../platform/Actor.ts"
import { Crypto } from "../../platform/Crypto.ts"
import { WebhookConfig } from "../Config.ts"
import { deliveryActor, DeliveryAttempts } from "./Delivery.ts"
import { DeliveryRepo } from "./DeliveryRepo.ts"
import { Egress } from "./Egress.ts"
import { EventRouter, routerActor, routerCheckpointsLayer } from "./Router.ts"
import { RouterRepo } from "./RouterRepo.ts"
import { Scheduler } from "./Scheduler.ts"
import { SchedulerRepo } from "./SchedulerRepo.ts"

/**
 * The webhook side of the `workers` role: the event router (with its checkpoints), the delivery actor and the
 * retry scheduler.
 */
export const webhookWorkersLayer = Layer.mergeAll(
  actorLayer(routerActor),
  routerCheckpointsLayer,
  actorLayer(deliveryActor),
).pipe(
  Layer.provideMerge(Layer.mergeAll(EventRouter.layer, DeliveryAttempts.layer)),
  Layer.provideMerge(Scheduler.layer),
  Layer.provide(Layer.mergeAll(Egress.layer, Crypto.layer)),
  Layer.provideMerge(Layer.mergeAll(RouterRepo.layer, DeliveryRepo.layer, SchedulerRepo.layer)),
  Layer.provideMerge(WebhookConfig.layer),
)
