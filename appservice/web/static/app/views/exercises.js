// The exercise catalogue: search by text, category, body part and equipment
// (/app/exercises?q=…&category=…&bodyPart=…&equipment=…), and one exercise with its
// instructions (/app/exercises/{id}).

import { h, field, select, dl, paragraphs } from "../dom.js";
import { api } from "../api.js";
import { formNavigate } from "../router.js";
import { t } from "../i18n.js";

let facetsOnce = null;

// collator orders the choices as the page's language does: German "oberer Rücken" among
// its capitalized nouns, not after them.
const collator = new Intl.Collator(document.documentElement.lang || "en");

// facets are the categories, body parts and equipment the catalogue has, in the page's
// language, read once.
function facets() {
  if (!facetsOnce) {
    facetsOnce = api.exercises({ limit: 1000 }).then(({ exercises = [] }) => {
      const distinct = (k) => [...new Set(exercises.map((e) => e[k]).filter(Boolean))].sort(collator.compare);
      return { category: distinct("category"), bodyPart: distinct("bodyPart"), equipment: distinct("equipment") };
    }).catch((e) => {
      facetsOnce = null;
      throw e;
    });
  }
  return facetsOnce;
}

// exerciseQuery reads the search from an address's query.
function exerciseQuery(query) {
  return { q: query.get("q") || "", category: query.get("category") || "", bodyPart: query.get("bodyPart") || "", equipment: query.get("equipment") || "" };
}

// searchFields are the exercise search's fields.
function searchFields(q, f) {
  return h("div", { class: "search-fields" },
    field(t("search.label"), h("input", { id: "exercise-q", name: "q", type: "search", value: q.q, placeholder: t("exercises.placeholder") })),
    field(t("exercises.category"), select("exercise-category", "category", t("exercises.any_category"), f.category, q.category)),
    field(t("exercises.body_part"), select("exercise-body-part", "bodyPart", t("exercises.any_body_part"), f.bodyPart, q.bodyPart)),
    field(t("exercises.equipment"), select("exercise-equipment", "equipment", t("exercises.any_equipment"), f.equipment, q.equipment)));
}

export async function exercisesView({ query, data }) {
  const q = exerciseQuery(query);
  const [f, exercises] = await Promise.all([
    facets().catch(() => ({ category: [], bodyPart: [], equipment: [] })),
    data ? Promise.resolve(data) : api.exercises({ ...q, limit: 100 }).then((r) => r.exercises || []),
  ]);
  const form = formNavigate(h("form", { class: "search", id: "exercise-search", role: "search" },
    searchFields(q, f), h("button", { type: "submit", id: "exercise-search-submit" }, t("search.submit"))), "/app/exercises");
  return h("section", { class: "card", id: "exercises", "data-testid": "exercises" },
    h("h1", {}, t("exercises.title")),
    form,
    exercises.length === 0 ? h("p", { class: "hint", id: "exercises-empty" }, t("exercises.none"))
      : h("ul", { class: "results", id: "exercise-results" }, exercises.map((e) => h("li", { "data-testid": "exercise-result", "data-id": e.id },
        h("a", { href: `/app/exercises/${encodeURIComponent(e.id)}`, class: "exercise-link" }, e.name),
        h("span", { class: "meta" }, [e.category, e.bodyPart, e.equipment].filter(Boolean).join(" · "))))));
}

export async function exerciseView({ params }) {
  const e = await api.exercise(params.id);
  return h("article", { class: "card", id: "exercise", "data-testid": "exercise", "data-id": e.id },
    h("p", {}, h("a", { href: "/app/exercises", id: "exercise-back" }, t("exercises.back"))),
    h("h1", { id: "exercise-name" }, e.name),
    dl([[t("exercises.category"), e.category, "exercise-category"], [t("exercises.body_part"), e.bodyPart, "exercise-body-part"], [t("exercises.equipment"), e.equipment, "exercise-equipment"]]),
    h("h2", {}, t("exercises.instructions")),
    paragraphs(e.instructions, { id: "exercise-instructions", class: "instructions" }));
}
