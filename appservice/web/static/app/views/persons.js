// The organization's persons (/app/persons?customId=…), most recently changed first, with
// the custom id filter (custom ids are not unique) and each person's custom id editable.

import { h, field, formatDate } from "../dom.js";
import { api, maxCustomId } from "../api.js";
import { state } from "../state.js";
import { focusPerson } from "../actions.js";
import { formNavigate, navigate, refresh } from "../router.js";
import { action, personLink } from "./common.js";
import { t, day } from "../i18n.js";

export async function personsView({ query, data }) {
  const customId = query.get("customId") || "";
  const persons = data || (await api.persons({ customId, limit: 200 })).persons || [];
  const filter = h("input", { id: "persons-custom-id", name: "customId", value: customId, autocomplete: "off" });
  const form = formNavigate(h("form", { class: "search", id: "persons-search", role: "search" },
    field(t("person.custom_id"), filter),
    h("button", { type: "submit", id: "persons-search-submit" }, t("persons.find")),
    customId ? h("a", { href: "/app/persons", class: "secondary", id: "persons-search-clear" }, t("persons.show_all")) : null), "/app/persons");
  const msg = h("div", { class: "slot" });
  const focusId = state.status && state.status.person ? String(state.status.person.id) : "";

  return h("section", { class: "card", id: "persons", "data-testid": "persons" },
    h("h1", {}, t("persons.title")),
    form, msg,
    customId && persons.length > 1
      ? h("p", { class: "info", id: "persons-shared" }, t("persons.shared", { n: persons.length, customId })) : null,
    persons.length === 0 ? h("p", { class: "hint", id: "persons-empty" }, customId ? t("persons.none_with", { customId }) : t("persons.none"))
      : h("table", { class: "list", id: "persons-table" },
        h("thead", {}, h("tr", {}, [t("persons.name"), t("focus.birthdate"), t("person.custom_id"), t("col.changed"), ""].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, persons.map((p) => personRow(p, msg, focusId)))));
}

function personRow(p, msg, focusId) {
  const input = h("input", { id: `custom-id-${p.id}`, class: "custom-id", value: p.customId || "", maxlength: maxCustomId, "aria-label": t("persons.custom_id_of", { name: p.name || p.id }) });
  const save = action(h("button", { type: "button", class: "small", "data-testid": "custom-id-save", "data-id": p.id }, t("persons.save")), msg, async () => {
    await api.setCustomId(p.id, input.value.trim());
    await refresh();
  });
  const select = String(p.id) === focusId ? h("span", { class: "badge focus-badge" }, t("person.in_focus"))
    : action(h("button", { type: "button", class: "small secondary", "data-testid": "person-select", "data-id": p.id }, t("persons.select")), msg, async () => {
      await focusPerson(p.id);
      await navigate("/app");
    });
  return h("tr", { "data-testid": "person-row", "data-id": p.id },
    h("td", {}, personLink(p)),
    h("td", {}, day(p.birthDate) || ""),
    h("td", {}, h("span", { class: "inline" }, input, save)),
    h("td", {}, formatDate(p.lastChangedAt)),
    h("td", {}, select));
}
