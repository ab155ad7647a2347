// The organization's workout plans (/app/workouts?q=…) and the template library
// (/app/templates?q=…).

import { h, field, formatDate, exerciseCount } from "../dom.js";
import { api } from "../api.js";
import { state, personName } from "../state.js";
import { createWorkout } from "../actions.js";
import { formNavigate } from "../router.js";
import { action, workoutTable } from "./common.js";
import { t } from "../i18n.js";

function searchForm(id, path, q) {
  return formNavigate(h("form", { class: "search", id, role: "search" },
    field(t("search.label"), h("input", { id: `${id}-q`, name: "q", type: "search", value: q, placeholder: t("workouts.placeholder") })),
    h("button", { type: "submit", id: `${id}-submit` }, t("search.submit"))), path);
}

export async function workoutsView({ query, data }) {
  const q = query.get("q") || "";
  const workouts = data || (await api.workouts({ q, limit: 100 })).workouts || [];
  return h("section", { class: "card", id: "workouts", "data-testid": "workouts" },
    h("h1", {}, t("workouts.title")),
    searchForm("workout-search", "/app/workouts", q),
    workoutTable(workouts, { id: "workout-results", empty: q ? t("workouts.none_match") : t("workouts.none_yet") }));
}

export async function templatesView({ query }) {
  const q = query.get("q") || "";
  const templates = (await api.workouts({ q, template: true, limit: 100 })).workouts || [];
  const focus = state.status && state.status.person;
  const msg = h("div", { class: "slot" });
  return h("section", { class: "card", id: "templates", "data-testid": "templates" },
    h("h1", {}, t("templates.title")),
    searchForm("template-search", "/app/templates", q),
    focus ? h("p", { class: "hint" }, t("templates.use_hint", { name: personName(focus) }))
      : h("p", { class: "hint" }, t("templates.focus_hint")),
    msg,
    templates.length === 0 ? h("p", { class: "hint", id: "template-results-empty" }, t("templates.none"))
      : h("ul", { class: "cards", id: "template-results" }, templates.map((tpl) => h("li", { class: "template", "data-testid": "template", "data-id": tpl.id },
        h("h2", {}, h("a", { href: `/app/workouts/${encodeURIComponent(tpl.id)}`, class: "workout-link" }, tpl.name)),
        tpl.description ? h("p", {}, tpl.description) : null,
        h("p", { class: "meta" }, exerciseCount(tpl.exerciseCount ?? (tpl.exercises || []).length), tpl.lastChangedAt ? ` · ${formatDate(tpl.lastChangedAt)}` : ""),
        focus ? action(h("button", { type: "button", "data-testid": "template-use", "data-id": tpl.id }, t("templates.use_for", { name: personName(focus) })), msg,
          () => createWorkout({ personId: focus.id, templateId: tpl.id })) : null))));
}
