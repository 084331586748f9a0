import { DeadLetterAnswer, SystemAnswer } from "../schemas"
import { api } from "./api"

/** How often the system page reads the figures again: JetStream's counts are not events `/api/live` carries. */
export const SYSTEM_REFRESH_MS = 3000

export const loadSystem = () => api(SystemAnswer, "GET", "/api/system")

export const retryDeadLetter = async (id: number) =>
  (await api(DeadLetterAnswer, "POST", `/api/dead-letters/${id}/retry`)).dead_letter
