import { createRouter, createWebHistory } from "vue-router"
import { linkSession } from "./composables/api"
import { clearSession, csrfToken, hasRole, loadSession } from "./composables/session"
// The pages a first load opens (the sign-in page, and the deliveries every link to the console lands on) are in the
// shell's bundle: no second round of script requests before the first rows. The rest load when first opened.
import DeliveriesPage from "./pages/DeliveriesPage.vue"
import LoginPage from "./pages/LoginPage.vue"
import type { Role } from "./types"

declare module "vue-router" {
  interface RouteMeta {
    /** Pages anyone may see (the sign-in page); every other page needs a session. */
    public?: boolean
    /** The least role that may open the page. */
    role?: Role
    title?: string
  }
}

export const router = createRouter({
  history: createWebHistory(),
  routes: [
    { path: "/", redirect: "/deliveries" },
    {
      path: "/login",
      name: "login",
      component: LoginPage,
      meta: { public: true, title: "Sign in" },
    },
    {
      path: "/deliveries",
      name: "deliveries",
      component: DeliveriesPage,
      meta: { title: "Deliveries" },
    },
    {
      path: "/deliveries/:id",
      name: "delivery",
      component: () => import("./pages/DeliveryPage.vue"),
      meta: { title: "Delivery" },
    },
    {
      path: "/endpoints",
      name: "endpoints",
      component: () => import("./pages/EndpointsPage.vue"),
      meta: { title: "Endpoints" },
    },
    {
      path: "/endpoints/:id",
      name: "endpoint",
      component: () => import("./pages/EndpointPage.vue"),
      meta: { title: "Endpoint" },
    },
    {
      path: "/owners",
      name: "owners",
      component: () => import("./pages/OwnersPage.vue"),
      meta: { title: "Owners" },
    },
    {
      path: "/owners/:slug",
      name: "owner",
      component: () => import("./pages/OwnerPage.vue"),
      meta: { title: "Owner" },
    },
    {
      path: "/prospects/:id",
      name: "prospect",
      component: () => import("./pages/ProspectPage.vue"),
      meta: { title: "Prospect" },
    },
    {
      path: "/search",
      name: "search",
      component: () => import("./pages/SearchPage.vue"),
      meta: { title: "Search" },
    },
    {
      path: "/policies",
      name: "policies",
      component: () => import("./pages/PoliciesPage.vue"),
      meta: { title: "Policies" },
    },
    {
      path: "/policies/:id",
      name: "policy",
      component: () => import("./pages/PolicyPage.vue"),
      meta: { title: "Policy" },
    },
    {
      path: "/secrets",
      name: "secrets",
      component: () => import("./pages/SecretsPage.vue"),
      meta: { title: "Secrets" },
    },
    {
      path: "/audit",
      name: "audit",
      component: () => import("./pages/AuditPage.vue"),
      meta: { title: "Audit" },
    },
    {
      path: "/ingest",
      name: "ingest",
      component: () => import("./pages/IngestPage.vue"),
      meta: { title: "Ingest log" },
    },
    {
      path: "/system",
      name: "system",
      component: () => import("./pages/SystemPage.vue"),
      meta: { title: "System" },
    },
    {
      path: "/operators",
      name: "operators",
      component: () => import("./pages/OperatorsPage.vue"),
      meta: { title: "Operators", role: "admin" },
    },
    {
      path: "/:rest(.*)*",
      name: "not-found",
      component: () => import("./pages/NotFoundPage.vue"),
      meta: { title: "Not found" },
    },
  ],
})

// A 401 on any call (the session expired or was revoked) sends the operator to the sign-in page, back here afterwards.
linkSession({
  csrfToken,
  expired: async () => {
    clearSession()
    const current = router.currentRoute.value
    if (current.name !== "login") {
      await router.push({ name: "login", query: { next: current.fullPath } })
    }
  },
})

router.beforeEach(async (to) => {
  if (to.meta.public) return true
  const session = await loadSession()
  if (!session) return { name: "login", query: { next: to.fullPath } }
  if (to.meta.role && !hasRole(to.meta.role)) return { name: "deliveries" }
  return true
})

router.afterEach((to) => {
  document.title = to.meta.title ? `${to.meta.title} · Operator console` : "Operator console"
})
