import { createApp } from "vue"
import App from "./App.vue"
import { dropPrefetched, prefetch, withQuery } from "./composables/api"
import { DELIVERY_FILTERS } from "./composables/deliveries"
import { loadSession } from "./composables/session"
import { router } from "./router"
import "./styles.css"

// The first load asks for the session and the first page's data at once: the deliveries (where "/" leads), with
// the filters of the link, as the page itself asks for them. Whatever the first page does not take is dropped.
if (location.pathname === "/" || location.pathname === "/deliveries") {
  const params = new URLSearchParams(location.search)
  const filters = Object.fromEntries(
    [...DELIVERY_FILTERS, "cursor"].map((key) => [
      key,
      location.pathname === "/" ? "" : (params.get(key) ?? ""),
    ]),
  )
  prefetch(withQuery("/api/deliveries", filters))
}
void loadSession()
router.afterEach(() => void setTimeout(dropPrefetched, 0))

createApp(App).use(router).mount("#app")
