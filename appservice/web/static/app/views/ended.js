// The "session ended" view: the session expired or was signed out while the page was open.

import { h } from "../dom.js";

export function endedView(role) {
  const member = role === "member";
  return h("section", { class: "card", id: "session-ended", "data-testid": "session-ended" },
    h("h1", {}, "Session ended"),
    member ? h("p", {}, "Your session has ended. Open Go again from the application of your clinic or center.")
      : [h("p", {}, "Your session has ended. Open the link again from your partner application, or sign in."),
        h("p", {}, h("a", { href: "/app/signin", id: "session-ended-signin", class: "button" }, "Sign in"))]);
}
