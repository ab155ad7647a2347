// The "session ended" view: the session expired or was signed out while the page was open.

import { h } from "../dom.js";
import { t } from "../i18n.js";

export function endedView(role) {
  const member = role === "member";
  return h("section", { class: "card", id: "session-ended", "data-testid": "session-ended" },
    h("h1", {}, t("ended.title")),
    member ? h("p", {}, t("ended.member"))
      : [h("p", {}, t("ended.instructor")),
        h("p", {}, h("a", { href: "/app/signin", id: "session-ended-signin", class: "button" }, t("signin.submit")))]);
}
