// The person views: the contact in focus (/app), one person (/app/persons/{id}) with details,
// profile data and plans, and the "New plan" form.

import { h, dl, field, formatDate, replace } from "../dom.js";
import { api, maxCustomId } from "../api.js";
import { state, personName } from "../state.js";
import { createWorkout, focusPerson } from "../actions.js";
import { refresh } from "../router.js";
import { action, showError, workoutTable } from "./common.js";
import { t, parts, day, localDateTime } from "../i18n.js";

// focusView shows the session's person in focus, or how to get one.
export async function focusView(ctx) {
  const p = state.status && state.status.person;
  if (p) return personView({ ...ctx, params: { id: String(p.id) } });
  return h("section", { class: "card", id: "focus-empty", "data-testid": "focus-empty" },
    h("h1", {}, t("focus.empty_title")),
    h("p", {}, parts("focus.empty_pick", { list: h("a", { href: "/app/persons" }, t("focus.empty_list")) })),
    h("p", {}, parts("focus.empty_also", {
      search: h("a", { href: "/app/exercises" }, t("focus.empty_search")),
      templates: h("a", { href: "/app/templates" }, t("focus.empty_templates")),
    })));
}

const genders = { female: t("gender.female"), male: t("gender.male") };

// personView shows one person. data, from selectPerson, says whether the person was created
// and how many shared the custom id.
export async function personView({ params, data }) {
  const [{ person, profile = [], workouts = [] }, templates] = await Promise.all([
    api.person(params.id),
    api.workouts({ template: true, limit: 100 }).then((r) => r.workouts || []).catch(() => []),
  ]);
  const inFocus = state.status && state.status.person && String(state.status.person.id) === String(person.id);
  const msg = h("div", { class: "slot" });

  const focusButton = inFocus ? h("span", { class: "badge focus-badge", id: "person-in-focus" }, t("person.in_focus"))
    : action(h("button", { type: "button", id: "person-focus", class: "secondary" }, t("person.put_in_focus")), msg, async () => {
      await focusPerson(person.id);
      await refresh();
    });

  const notes = [];
  if (data && data.created) notes.push(h("p", { class: "info", id: "person-created" }, t("person.created")));
  if (data && data.matched > 1) {
    notes.push(h("p", { class: "info", id: "person-matched" },
      t("person.matched", { n: data.matched, customId: person.customId })));
  }

  const customInput = h("input", { id: "person-custom-id-input", name: "customId", value: person.customId || "", maxlength: maxCustomId, autocomplete: "off" });
  const customSave = action(h("button", { type: "submit", id: "person-custom-id-save" }, t("person.save_custom_id")), msg, async () => {
    await api.setCustomId(person.id, customInput.value.trim());
    await refresh();
  });

  return h("div", { class: "person-page" },
    h("section", { class: "card", id: "person", "data-testid": "person", "data-id": person.id },
      h("div", { class: "title-row" }, h("h1", { id: "person-name" }, personName(person)), focusButton),
      notes, msg,
      dl([
        [t("focus.birthdate"), person.birthDate ? day(person.birthDate) : t("focus.not_given"), "person-birthdate"],
        [t("person.gender"), genders[person.gender] || "", "person-gender"],
        [t("person.diagnosis"), person.diagnosis || "", "person-diagnosis"],
        [t("person.custom_id"), person.customId || "", "person-custom-id"],
        [t("person.partner_ids"), (person.partnerIds || []).join(", "), "person-partner-ids"],
        [t("person.email"), person.email, "person-email"],
        [t("person.mobile"), person.mobile, "person-mobile"],
        [t("person.phone_home"), person.phoneHome, "person-phone-home"],
        [t("person.phone_work"), person.phoneWork, "person-phone-work"],
        [t("person.address"), [person.address, [person.zipcode, person.location].filter(Boolean).join(" "), person.country].filter(Boolean).join(", "), "person-address"],
        [t("person.changed"), formatDate(person.lastChangedAt), "person-changed"],
      ], { id: "person-details" }),
      h("form", { class: "inline", id: "person-custom-id-form" }, field(t("person.custom_id"), customInput), customSave)),
    h("section", { class: "card", id: "person-profile-card" },
      h("h2", {}, t("person.profile")),
      profileTable(profile)),
    h("section", { class: "card", id: "person-workouts-card" },
      h("h2", {}, t("person.plans")),
      workoutTable(workouts, { id: "person-workouts", showExecutor: false, empty: t("person.no_plans") }),
      newPlanForm(person, templates)));
}

function profileTable(profile) {
  if (!profile.length) return h("p", { class: "hint", id: "profile-empty" }, t("profile.none"));
  return h("table", { class: "list", id: "profile-table" },
    h("thead", {}, h("tr", {}, [t("profile.measurement"), t("profile.value"), t("profile.unit"), t("profile.date"), t("profile.source")].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, profile.map((e) => h("tr", { "data-testid": "profile-row", "data-key": e.key },
      h("td", { title: e.description || null }, e.name || e.key),
      h("td", { class: "num" }, e.value),
      h("td", {}, e.unit || ""),
      h("td", {}, localDateTime(e.date) || ""),
      h("td", {}, e.source || "")))));
}

// newPlanForm creates a plan for person, empty or from a template, and opens the editor.
function newPlanForm(person, templates) {
  const template = h("select", { id: "new-plan-template", name: "templateId" },
    h("option", { value: "" }, t("plan.empty")),
    templates.map((tpl) => h("option", { value: tpl.id }, tpl.name)));
  const title = h("input", { id: "new-plan-title", name: "title", maxlength: 200, placeholder: t("plan.title_placeholder") });
  const slot = h("div", { class: "slot" });
  const create = h("button", { type: "submit", id: "new-plan-create" }, t("plan.new"));
  const form = h("form", { class: "new-plan", id: "new-plan", "aria-labelledby": "new-plan-heading" },
    h("h3", { id: "new-plan-heading" }, t("plan.new")),
    field(t("plan.template"), template), field(t("plan.title"), title), create, slot);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    replace(slot);
    create.disabled = true;
    try {
      await createWorkout({ personId: person.id, templateId: template.value, title: title.value.trim() });
    } catch (e) {
      showError(slot, e);
    } finally {
      create.disabled = false;
    }
  });
  return form;
}
