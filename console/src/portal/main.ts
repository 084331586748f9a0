import { createApp, h } from "vue"

createApp({ render: () => h("main", [h("h1", "Webhooks portal")]) }).mount("#app")
