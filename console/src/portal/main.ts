import { createApp } from "vue"
import "../styles.css"
import "./portal.css"
import PortalApp from "./PortalApp.vue"
import { postHeightTo } from "./resize"
import { portalRouter } from "./router"
import { loadSession, usePortalSession } from "./session"

// The session comes first: its CSRF token goes on every change, its parent origin gets the page's height.
void loadSession().then(() => {
  createApp(PortalApp).use(portalRouter).mount("#app")
  const parentOrigin = usePortalSession().session.value?.parent_origin
  if (parentOrigin) postHeightTo(parentOrigin)
})
