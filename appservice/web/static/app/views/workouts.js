// The organization's workout plans (/app/workouts?q=…) and the template library
// (/app/templates?q=…).

import { h, field, formatDate, count } from "../dom.js";
import { api } from "../api.js";
import { state, personName } from "../state.js";
import { createWorkout } from "../actions.js";
import { formNavigate } from "../router.js";
import { action, workoutTable } from "./common.js";

function searchForm(id, path, q) {
  return formNavigate(h("form", { class: "search", id, role: "search" },
    field("Search", h("input", { id: `${id}-q`, name: "q", type: "search", value: q, placeholder: "Title or notes" })),
    h("button", { type: "submit", id: `${id}-submit` }, "Search")), path);
}

export async function workoutsView({ query, data }) {
  const q = query.get("q") || "";
  const workouts = data || (await api.workouts({ q, limit: 100 })).workouts || [];
  return h("section", { class: "card", id: "workouts", "data-testid": "workouts" },
    h("h1", {}, "Workout plans"),
    searchForm("workout-search", "/app/workouts", q),
    workoutTable(workouts, { id: "workout-results", empty: q ? "No workout plan matches." : "No workout plans yet." }));
}

export async function templatesView({ query }) {
  const q = query.get("q") || "";
  const templates = (await api.workouts({ q, template: true, limit: 100 })).workouts || [];
  const focus = state.status && state.status.person;
  const msg = h("div", { class: "slot" });
  return h("section", { class: "card", id: "templates", "data-testid": "templates" },
    h("h1", {}, "Template library"),
    searchForm("template-search", "/app/templates", q),
    focus ? h("p", { class: "hint" }, `"Use" creates a plan for ${personName(focus)} from the template.`)
      : h("p", { class: "hint" }, "Put a person in focus to create plans from templates."),
    msg,
    templates.length === 0 ? h("p", { class: "hint", id: "template-results-empty" }, "No template matches.")
      : h("ul", { class: "cards", id: "template-results" }, templates.map((t) => h("li", { class: "template", "data-testid": "template", "data-id": t.id },
        h("h2", {}, h("a", { href: `/app/workouts/${encodeURIComponent(t.id)}`, class: "workout-link" }, t.name)),
        t.description ? h("p", {}, t.description) : null,
        h("p", { class: "meta" }, count(t.exerciseCount ?? (t.exercises || []).length, "exercise"), t.lastChangedAt ? ` · ${formatDate(t.lastChangedAt)}` : ""),
        focus ? action(h("button", { type: "button", "data-testid": "template-use", "data-id": t.id }, "Use for ", personName(focus)), msg,
          () => createWorkout({ personId: focus.id, templateId: t.id })) : null))));
}
