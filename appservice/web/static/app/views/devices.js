// The desktops the desktop wrapper signs the instructor in on by a remembered sign-on
// (/app/devices): each with its external user, computer, last use and end, and a button
// that signs that desktop out, so that it asks for the password at its next start.

import { h, formatDate } from "../dom.js";
import { api } from "../api.js";
import { refresh } from "../router.js";
import { action } from "./common.js";
import { t } from "../i18n.js";

export async function devicesView({ data }) {
  const devices = data || (await api.devices()).devices || [];
  const msg = h("div", { class: "slot" });
  return h("section", { class: "card", id: "devices", "data-testid": "devices" },
    h("h1", {}, t("devices.title")),
    h("p", { class: "hint", id: "devices-intro" }, t("devices.intro")),
    msg,
    devices.length === 0 ? h("p", { class: "hint", id: "devices-empty" }, t("devices.none"))
      : h("table", { class: "list", id: "devices-table" },
        h("thead", {}, h("tr", {}, [t("devices.external_user"), t("devices.computer"), t("devices.last_used"), t("devices.ends"), ""]
          .map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, devices.map((d) => h("tr", { "data-testid": "device-row", "data-id": d.id },
          h("td", { class: "device-user" }, d.externalUser),
          h("td", { class: "device-computer" }, d.computer || ""),
          h("td", { class: "device-last-used" }, formatDate(d.lastUsedAt)),
          h("td", { class: "device-ends" }, formatDate(d.expiresAt)),
          h("td", {}, action(h("button", { type: "button", class: "small secondary", "data-testid": "device-revoke", "data-id": d.id },
            t("devices.revoke")), msg, async () => {
            await api.revokeDevice(d.id);
            await refresh();
          })))))));
}
