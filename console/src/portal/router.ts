import { createRouter, createWebHistory } from "vue-router"

/** The portal's pages under /portal/, each with its title. */
export const portalRouter = createRouter({
  history: createWebHistory("/portal/"),
  routes: [
    { path: "/", redirect: "/endpoints" },
    {
      path: "/endpoints",
      name: "endpoints",
      component: () => import("./pages/EndpointsPage.vue"),
      meta: { title: "Endpoints" },
    },
    {
      path: "/endpoints/new",
      name: "endpoint-new",
      component: () => import("./pages/EndpointFormPage.vue"),
      meta: { title: "New endpoint", changes: true },
    },
    {
      path: "/endpoints/:id",
      name: "endpoint",
      component: () => import("./pages/EndpointPage.vue"),
      meta: { title: "Endpoint" },
    },
    {
      path: "/endpoints/:id/edit",
      name: "endpoint-edit",
      component: () => import("./pages/EndpointFormPage.vue"),
      meta: { title: "Edit endpoint", changes: true },
    },
    {
      path: "/deliveries",
      name: "deliveries",
      component: () => import("./pages/DeliveriesPage.vue"),
      meta: { title: "Deliveries" },
    },
    {
      path: "/deliveries/:id",
      name: "delivery",
      component: () => import("./pages/DeliveryPage.vue"),
      meta: { title: "Delivery" },
    },
    {
      path: "/events",
      name: "events",
      component: () => import("./pages/EventsPage.vue"),
      meta: { title: "Event catalog" },
    },
    {
      path: "/secret",
      name: "secret",
      component: () => import("./pages/SecretPage.vue"),
      meta: { title: "Signing secret" },
    },
    {
      path: "/verify",
      name: "verify",
      component: () => import("./pages/VerifyPage.vue"),
      meta: { title: "Verify signatures" },
    },
    {
      path: "/:rest(.*)*",
      name: "not-found",
      component: () => import("./pages/NotFoundPage.vue"),
      meta: { title: "Not found" },
    },
  ],
})

portalRouter.afterEach((to) => {
  document.title = to.meta.title ? `${to.meta.title} · Webhooks portal` : "Webhooks portal"
})
