import { Agent, request } from "node:http"

/** A JSON POST from the loopback address `agent` binds; milliseconds and status. */
export const postFrom = (port: number, path: string, agent: Agent, fields: Record<string, string>) =>
  new Promise<{ readonly ms: number; readonly status: number }>((resolve, reject) => {
    const body = JSON.stringify(fields)
    const start = performance.now()
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        res.resume()
        res.on("end", () => resolve({ ms: performance.now() - start, status: res.statusCode ?? 0 }))
      },
    )
    req.once("error", reject)
    req.end(body)
  })

/** A keep-alive agent whose connections come from `address` (all of 127.0.0.0/8 is this machine). */
export const agentFrom = (address: string) => new Agent({ keepAlive: true, localAddress: address })
