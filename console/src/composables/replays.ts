import { ReplayAnswer, ReplayList, ReplayPreviewAnswer, type ReplayRequest } from "../schemas"
import { api } from "./api"

/** An endpoint's replays (docs/operator-api.md): the partner API's replay, started and followed from the console. */
const base = (endpointId: string | number) =>
  `/api/endpoints/${encodeURIComponent(String(endpointId))}/replays`

export const listReplays = async (endpointId: string | number) =>
  (await api(ReplayList, "GET", base(endpointId))).replays

export const previewReplay = async (endpointId: string | number, request: ReplayRequest) =>
  (await api(ReplayPreviewAnswer, "POST", `${base(endpointId)}/preview`, request)).count

export const startReplay = async (endpointId: string | number, request: ReplayRequest) =>
  (await api(ReplayAnswer, "POST", base(endpointId), request)).replay

export const cancelReplay = async (endpointId: string | number, replayId: number) =>
  (await api(ReplayAnswer, "POST", `${base(endpointId)}/${replayId}/cancel`, {})).replay
