// The operator API's schemas (backend/operator/Api.ts, a schema-only file): the console decodes every answer with
// the same declarations the backend answers by.
export * from "../../backend/operator/Api.ts"
export * from "../../backend/operator/LiveEvents.ts"
export * from "../../backend/operator/DirectoryApi.ts"
export * from "../../backend/operator/IngestApi.ts"
export * from "../../backend/operator/SystemApi.ts"
