// One case (/app/cases/{caseId}): its exported plans with download links, and making it the
// session's case.

import { h } from "../dom.js";
import { api } from "../api.js";
import { state } from "../state.js";
import { setCase } from "../actions.js";
import { refresh } from "../router.js";
import { action } from "./common.js";
import { exportsTable } from "./editor.js";
import { t, parts } from "../i18n.js";

export async function caseView({ params }) {
  const caseId = params.caseId;
  const { exports = [] } = await api.caseExports(caseId);
  const isSession = state.status && state.status.caseId === caseId;
  const msg = h("div", { class: "slot" });
  return h("section", { class: "card", id: "case-view", "data-testid": "case", "data-case-id": caseId },
    h("h1", {}, parts("case.title", { caseId: h("code", { id: "case-view-id" }, caseId) })),
    isSession ? h("p", { class: "hint", id: "case-is-session" }, t("case.is_session"))
      : action(h("button", { type: "button", id: "case-make-session", class: "secondary" }, t("case.make_session")), msg, async () => {
        await setCase(caseId);
        await refresh();
      }),
    msg,
    exportsTable(caseId, exports));
}
