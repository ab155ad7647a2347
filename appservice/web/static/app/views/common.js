// Pieces several views share.

import { h, replace, formatDate } from "../dom.js";
import { personName } from "../state.js";
import { t } from "../i18n.js";
import { errorText } from "../errors.js";

// showError shows a failure with its fields, in place of the contents of slot.
export function showError(slot, err) {
  replace(slot, h("div", { class: "error", role: "alert", "data-testid": "error" },
    h("span", { class: "error-message" }, errorText(err)),
    err && err.code ? [" (", h("code", { class: "error-code" }, err.code), ")"] : null,
    err && err.fields && err.fields.length
      ? h("ul", {}, err.fields.map((f) => h("li", {}, h("code", {}, f.field), ": ", f.reason)))
      : null));
}

// action runs fn for a button click: the button is disabled meanwhile, a failure shows in
// slot (cleared first).
export function action(button, slot, fn) {
  button.addEventListener("click", async (event) => {
    event.preventDefault();
    if (slot) replace(slot);
    button.disabled = true;
    try {
      await fn();
    } catch (e) {
      if (slot) showError(slot, e);
    } finally {
      button.disabled = false;
    }
  });
  return button;
}

// workoutTable lists workouts with links to them (base: "/app/workouts" or "/go/workouts").
export function workoutTable(workouts, { id, base = "/app/workouts", showExecutor = true, empty = t("workouts.none") } = {}) {
  if (!workouts || workouts.length === 0) return h("p", { class: "hint", id: id ? `${id}-empty` : null }, empty);
  return h("table", { class: "list", id },
    h("thead", {}, h("tr", {},
      h("th", { scope: "col" }, t("col.plan")),
      showExecutor ? h("th", { scope: "col" }, t("col.for")) : null,
      h("th", { scope: "col" }, t("col.exercises")),
      h("th", { scope: "col" }, t("col.by")),
      h("th", { scope: "col" }, t("col.changed")))),
    h("tbody", {}, workouts.map((w) => h("tr", { "data-testid": "workout-row", "data-id": w.id },
      h("td", {}, h("a", { href: `${base}/${encodeURIComponent(w.id)}`, class: "workout-link" }, w.name || t("workout.untitled")),
        w.template ? h("span", { class: "badge" }, t("workout.template_badge")) : null),
      showExecutor ? h("td", {}, w.executor || "") : null,
      h("td", { class: "num" }, String(w.exerciseCount ?? (w.exercises || []).length)),
      h("td", {}, w.owner || ""),
      h("td", {}, formatDate(w.lastChangedAt))))));
}

// personLink links to a person's view.
export function personLink(p) {
  return h("a", { href: `/app/persons/${encodeURIComponent(p.id)}`, class: "person-link" }, personName(p) || `#${p.id}`);
}
