import { Effect } from "effect"
import { json, type Route, Unprocessable } from "../platform/Http.ts"
import { decodeFields, isJsonObject, joinedMessages } from "../platform/Validation.ts"
import { MoveOutInput, MoveOutInvalid, MoveOutRequest, MoveOutResponse } from "./LifecycleDomain.ts"
import { MoveOuts } from "./MoveOuts.ts"

const decodeMoveOut = decodeFields(MoveOutInput)

/** The move-out of a `{"move_out": {...}}` body, or MoveOutInvalid with a message per failing field. */
const moveOutOf = (parsed: unknown) => {
  if (!isJsonObject(parsed) || !isJsonObject(parsed.move_out)) {
    return Effect.fail(new MoveOutInvalid({ fields: { move_out: "Move out is required (an object)" } }))
  }
  const decoded = decodeMoveOut(parsed.move_out)
  return "errors" in decoded
    ? Effect.fail(new MoveOutInvalid({ fields: joinedMessages(decoded.errors) }))
    : Effect.succeed(decoded.value)
}

/** `POST /partners/{owner_slug}/move_outs`: the move-out creation endpoint (method and path are ours to choose). */
export const moveOutRoutes: ReadonlyArray<Route<MoveOuts>> = [
  {
    method: "POST",
    path: "/partners/:owner_slug/move_outs",
    access: { scope: "move_outs:write" },
    doc: {
      summary: "Create or update a move-out",
      description:
        'Body `{"move_out": {"external_id", "policy_number", "move_out_date"}}`, upserted on `external_id` within ' +
        "the owner. HTTP 200 both times; `status_code` is 201 when the move-out was created, which emits " +
        "`move_out.initiated` (its `move_out_id` is this `id`). Sending it again updates `move_out_date` and emits " +
        "nothing; a move-out stays with its policy. `policy_number` names one of this owner's policies (from the " +
        "policy events). Field errors are a 422 and change nothing.",
      tag: "Move-outs",
      body: MoveOutRequest,
      responses: [
        { status: 200, description: "The move-out as stored", schema: MoveOutResponse },
        {
          status: 422,
          description:
            "Invalid fields, a field missing to create, a policy number this owner has no policy for, or a " +
            "different policy for an existing move-out",
        },
      ],
    },
    handle: (request) =>
      Effect.gen(function* () {
        const input = yield* Effect.flatMap(request.json, moveOutOf)
        const { created, moveOut } = yield* MoveOuts.use((moveOuts) =>
          moveOuts.upsert(request.params.owner_slug!, input),
        )
        return json(200, { status_code: created ? 201 : 200, move_out: moveOut })
      }).pipe(
        Effect.catchTag("MoveOutInvalid", (error) =>
          Effect.fail(
            new Unprocessable({ message: "Move-out invalid.", resource: "move_out", fields: error.fields }),
          ),
        ),
      ),
  },
]
