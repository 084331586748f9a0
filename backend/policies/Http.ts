import { Effect } from "effect"
import { FastResponse } from "srvx/node"
import { NotFound, type Route } from "../platform/Http.ts"
import { Policies } from "./Policies.ts"

/**
 * `GET /documents/<name>.zip` on the enrollment host: a policy's document archive, the `policy_url` of
 * `policy.documents_updated`. The unguessable name is the only key (the spec leaves the link open); an unknown
 * name is a 404 that says nothing more. Archives never change, so they may be cached for ever.
 */
export const documentRoutes: ReadonlyArray<Route<Policies>> = [
  {
    method: "GET",
    path: "/documents/:name",
    access: "public",
    handle: (request) =>
      Effect.gen(function* () {
        const name = request.params.name ?? ""
        const bytes = yield* Policies.use((policies) => policies.archive(name))
        if (bytes === undefined) return yield* new NotFound({ message: "Document not found." })
        return new FastResponse(bytes, {
          status: 200,
          headers: {
            "content-type": "application/zip",
            "content-disposition": `attachment; filename="policy-documents.zip"`,
            "cache-control": "public, max-age=31536000, immutable",
            "x-content-type-options": "nosniff",
          },
        })
      }),
  },
]
