// The member's (Go) views: the plans their instructors made for them that the session sees,
// the link's clinic's (every clinic's after a national eID sign-in) (/go), and one plan
// with each exercise's instructions (/go/workouts/{id}). Each plan names its clinic, and
// the person as that clinic's record names them: clinics keep their own records, so one
// member may be "Kari Berg" at one and "Kari Nordmann" at another.

import { h, dose, paragraphs, formatDate, exerciseCount } from "../dom.js";
import { api } from "../api.js";
import { state } from "../state.js";
import { workoutShown } from "../actions.js";
import { t } from "../i18n.js";

export async function myPlansView() {
  const { workouts = [] } = await api.myWorkouts();
  const name = state.status && state.status.account ? state.status.account.displayName || "" : "";
  return h("section", { class: "card", id: "my-plans", "data-testid": "my-plans" },
    h("h1", { id: "greeting" }, name ? t("member.hi", { name }) : t("member.your_plans")),
    workouts.length === 0
      ? h("p", { class: "hint", id: "my-plans-empty" }, t("member.none"))
      : h("ul", { class: "cards", id: "my-plans-list" }, workouts.map((w) => h("li", { class: "plan-card", "data-testid": "my-plan", "data-id": w.id },
        h("h2", {}, h("a", { href: `/go/workouts/${encodeURIComponent(w.id)}`, class: "workout-link" }, w.name)),
        clinicLine(w, { class: "clinic", "data-testid": "my-plan-clinic" }),
        h("p", { class: "meta" }, exerciseCount(w.exerciseCount ?? (w.exercises || []).length),
          w.owner ? ` · ${t("member.from", { name: w.owner })}` : "", w.lastChangedAt ? ` · ${formatDate(w.lastChangedAt)}` : "")))));
}

export async function memberPlanView({ params, data }) {
  const w = data && String(data.id) === String(params.id) ? data : await api.workout(params.id);
  workoutShown(w);
  return h("article", { class: "card", id: "member-plan", "data-testid": "workout", "data-id": w.id },
    h("p", {}, h("a", { href: "/go", id: "member-plan-back" }, t("member.back"))),
    h("h1", { id: "workout-title" }, w.name),
    clinicLine(w, { class: "clinic", id: "member-plan-clinic" }),
    h("p", { class: "meta" }, w.owner ? t("member.plan_from", { name: w.owner }) : "", w.lastChangedAt ? ` · ${formatDate(w.lastChangedAt)}` : ""),
    w.description ? paragraphs(w.description, { id: "workout-notes" }) : null,
    h("ol", { class: "plan", id: "member-plan-items" }, (w.exercises || []).map((e, i) => h("li", { "data-testid": "plan-exercise", "data-exercise-id": e.exerciseId },
      h("h2", { id: `plan-exercise-${i + 1}` }, e.name),
      h("p", { class: "dose" }, dose(e)),
      e.note ? h("p", { class: "note" }, e.note) : null,
      h("details", { open: true }, h("summary", {}, t("member.how")), paragraphs(e.instructions, { class: "instructions" }))))));
}

// clinicLine is "Clinic B · for Kari Berg": the plan's organization and its record's name.
function clinicLine(w, attrs) {
  if (!w.organization && !w.executor) return null;
  return h("p", attrs, h("span", { class: "clinic-name" }, w.organization || ""),
    w.executor ? h("span", { class: "executor" }, `${w.organization ? " · " : ""}${t("member.for", { name: w.executor })}`) : null);
}
