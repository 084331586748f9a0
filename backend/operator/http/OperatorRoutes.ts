import { Effect } from "effect"
import { json } from "../../platform/Http.ts"
import { Operators } from "../Operators.ts"
import { actorOf, invalid, objectBody, route } from "./Route.ts"

/** The admins' management of operator accounts. */
export const operatorRoutes = [
  route("GET", "/api/operators", "admin", () =>
    Effect.gen(function* () {
      return json(200, { operators: yield* (yield* Operators).list() })
    }),
  ),
  route("POST", "/api/operators", "admin", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "operator")
      const created = yield* (yield* Operators).create(
        { email: body.email, role: body.role },
        actorOf(request),
      )
      return json(201, { operator: created.operator, password: created.password })
    }),
  ),
  route("PUT", "/api/operators/:email", "admin", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "operator")
      const email = request.params.email ?? ""
      // An admin cannot lock themself out; another admin can.
      if (
        email.toLowerCase() === actorOf(request).toLowerCase() &&
        (body.disabled === true || (body.role !== undefined && body.role !== "admin"))
      ) {
        return yield* invalid("Invalid operator.", "operator", {
          base: "you cannot disable or demote yourself",
        })
      }
      const updated = yield* (yield* Operators).update(
        email,
        { role: body.role, disabled: body.disabled },
        actorOf(request),
      )
      return json(200, { operator: updated })
    }),
  ),
]
