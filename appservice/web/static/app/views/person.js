// The person views: the contact in focus (/app), one person (/app/persons/{id}) with details,
// profile data and plans, and the "New plan" form.

import { h, dl, field, formatDate, replace } from "../dom.js";
import { api, maxCustomId } from "../api.js";
import { state, personName } from "../state.js";
import { createWorkout, focusPerson } from "../actions.js";
import { refresh } from "../router.js";
import { action, showError, workoutTable } from "./common.js";

// focusView shows the session's person in focus, or how to get one.
export async function focusView(ctx) {
  const p = state.status && state.status.person;
  if (p) return personView({ ...ctx, params: { id: String(p.id) } });
  return h("section", { class: "card", id: "focus-empty", "data-testid": "focus-empty" },
    h("h1", {}, "No contact in focus"),
    h("p", {}, "Open the application from your partner application with a contact, or pick a person from the ",
      h("a", { href: "/app/persons" }, "list of persons"), "."),
    h("p", {}, "You can also ", h("a", { href: "/app/exercises" }, "search the exercise catalogue"), " or browse the ",
      h("a", { href: "/app/templates" }, "template library"), "."));
}

const genders = { female: "Female", male: "Male" };

// personView shows one person. data, from selectPerson, says whether the person was created
// and how many shared the custom id.
export async function personView({ params, data }) {
  const [{ person, profile = [], workouts = [] }, templates] = await Promise.all([
    api.person(params.id),
    api.workouts({ template: true, limit: 100 }).then((r) => r.workouts || []).catch(() => []),
  ]);
  const inFocus = state.status && state.status.person && String(state.status.person.id) === String(person.id);
  const msg = h("div", { class: "slot" });

  const focusButton = inFocus ? h("span", { class: "badge focus-badge", id: "person-in-focus" }, "In focus")
    : action(h("button", { type: "button", id: "person-focus", class: "secondary" }, "Put in focus"), msg, async () => {
      await focusPerson(person.id);
      await refresh();
    });

  const notes = [];
  if (data && data.created) notes.push(h("p", { class: "info", id: "person-created" }, "A new person was created."));
  if (data && data.matched > 1) {
    notes.push(h("p", { class: "info", id: "person-matched" },
      `${data.matched} persons share the custom id ${person.customId}; this is the most recently changed.`));
  }

  const customInput = h("input", { id: "person-custom-id-input", name: "customId", value: person.customId || "", maxlength: maxCustomId, autocomplete: "off" });
  const customSave = action(h("button", { type: "submit", id: "person-custom-id-save" }, "Save custom id"), msg, async () => {
    await api.setCustomId(person.id, customInput.value.trim());
    await refresh();
  });

  return h("div", { class: "person-page" },
    h("section", { class: "card", id: "person", "data-testid": "person", "data-id": person.id },
      h("div", { class: "title-row" }, h("h1", { id: "person-name" }, personName(person)), focusButton),
      notes, msg,
      dl([
        ["Birthdate", person.birthDate || "not given", "person-birthdate"],
        ["Gender", genders[person.gender] || "", "person-gender"],
        ["Custom id", person.customId || "", "person-custom-id"],
        ["Partner ids", (person.partnerIds || []).join(", "), "person-partner-ids"],
        ["E-mail", person.email, "person-email"],
        ["Mobile", person.mobile, "person-mobile"],
        ["Phone (home)", person.phoneHome, "person-phone-home"],
        ["Phone (work)", person.phoneWork, "person-phone-work"],
        ["Address", [person.address, [person.zipcode, person.location].filter(Boolean).join(" "), person.country].filter(Boolean).join(", "), "person-address"],
        ["Last changed", formatDate(person.lastChangedAt), "person-changed"],
      ], { id: "person-details" }),
      h("form", { class: "inline", id: "person-custom-id-form" }, field("Custom id", customInput), customSave)),
    h("section", { class: "card", id: "person-profile-card" },
      h("h2", {}, "Profile data"),
      profileTable(profile)),
    h("section", { class: "card", id: "person-workouts-card" },
      h("h2", {}, "Workout plans"),
      workoutTable(workouts, { id: "person-workouts", showExecutor: false, empty: "No workout plans for this person yet." }),
      newPlanForm(person, templates)));
}

function profileTable(profile) {
  if (!profile.length) return h("p", { class: "hint", id: "profile-empty" }, "No profile data from the partner's system.");
  return h("table", { class: "list", id: "profile-table" },
    h("thead", {}, h("tr", {}, ["Measurement", "Value", "Unit", "Date", "Source"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, profile.map((e) => h("tr", { "data-testid": "profile-row", "data-key": e.key },
      h("td", { title: e.description || null }, e.name || e.key),
      h("td", { class: "num" }, e.value),
      h("td", {}, e.unit || ""),
      h("td", {}, e.date || ""),
      h("td", {}, e.source || "")))));
}

// newPlanForm creates a plan for person, empty or from a template, and opens the editor.
function newPlanForm(person, templates) {
  const template = h("select", { id: "new-plan-template", name: "templateId" },
    h("option", { value: "" }, "Empty plan"),
    templates.map((t) => h("option", { value: t.id }, t.name)));
  const title = h("input", { id: "new-plan-title", name: "title", maxlength: 200, placeholder: "Taken from the template when empty" });
  const slot = h("div", { class: "slot" });
  const create = h("button", { type: "submit", id: "new-plan-create" }, "New plan");
  const form = h("form", { class: "new-plan", id: "new-plan", "aria-labelledby": "new-plan-heading" },
    h("h3", { id: "new-plan-heading" }, "New plan"),
    field("Template", template), field("Title", title), create, slot);
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
