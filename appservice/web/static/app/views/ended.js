// The "session ended" view: the session expired or was signed out while the page was open.

import { h } from "../dom.js";
import { t } from "../i18n.js";

export function endedView(role) {
  const member = role === "member";
  return h("section", { class: "card", id: "session-ended", "data-testid": "session-ended" },
    h("h1", {}, t("ended.title")),
    member ? [h("p", {}, t("ended.member")),
      // With a national eID offered, the member signs in again on Go's start page: a page
      // load, not the router's, since the server renders that page.
      document.querySelector('meta[name="go-eid"]')
        ? h("p", {}, h("a", { href: "/go", id: "session-ended-eid", class: "button",
          on: { click: (event) => { event.preventDefault(); window.location.assign("/go"); } } }, t("signin.submit")))
        : null]
      : [h("p", {}, t("ended.instructor")),
        h("p", {}, h("a", { href: "/app/signin", id: "session-ended-signin", class: "button" }, t("signin.submit")))]);
}
