// The exercise catalogue: search by text, category, body part and equipment
// (/app/exercises?q=…&category=…&bodyPart=…&equipment=…), and one exercise with its
// instructions (/app/exercises/{id}).

import { h, field, select, dl, paragraphs } from "../dom.js";
import { api } from "../api.js";
import { formNavigate } from "../router.js";

let facetsOnce = null;

// facets are the categories, body parts and equipment the catalogue has, read once.
export function facets() {
  if (!facetsOnce) {
    facetsOnce = api.exercises({ limit: 1000 }).then(({ exercises = [] }) => {
      const distinct = (k) => [...new Set(exercises.map((e) => e[k]).filter(Boolean))].sort();
      return { category: distinct("category"), bodyPart: distinct("bodyPart"), equipment: distinct("equipment") };
    }).catch((e) => {
      facetsOnce = null;
      throw e;
    });
  }
  return facetsOnce;
}

// exerciseQuery reads the search from an address's query.
export function exerciseQuery(query) {
  return { q: query.get("q") || "", category: query.get("category") || "", bodyPart: query.get("bodyPart") || "", equipment: query.get("equipment") || "" };
}

// searchForm is the exercise search; prefix keeps ids apart when two are on one page.
export function searchForm(prefix, q, f) {
  return h("div", { class: "search-fields" },
    field("Search", h("input", { id: `${prefix}-q`, name: "q", type: "search", value: q.q, placeholder: "Name or instructions" })),
    field("Category", select(`${prefix}-category`, "Any category", f.category, q.category)),
    field("Body part", select(`${prefix}-body-part`, "Any body part", f.bodyPart, q.bodyPart)),
    field("Equipment", select(`${prefix}-equipment`, "Any equipment", f.equipment, q.equipment)));
}

// The selects are named after their ids; the query uses the API's names.
function fixNames(form, prefix) {
  form.querySelector(`#${prefix}-category`).name = "category";
  form.querySelector(`#${prefix}-body-part`).name = "bodyPart";
  form.querySelector(`#${prefix}-equipment`).name = "equipment";
  return form;
}

export async function exercisesView({ query, data }) {
  const q = exerciseQuery(query);
  const [f, exercises] = await Promise.all([
    facets().catch(() => ({ category: [], bodyPart: [], equipment: [] })),
    data ? Promise.resolve(data) : api.exercises({ ...q, limit: 100 }).then((r) => r.exercises || []),
  ]);
  const form = fixNames(h("form", { class: "search", id: "exercise-search", role: "search" },
    searchForm("exercise", q, f), h("button", { type: "submit", id: "exercise-search-submit" }, "Search")), "exercise");
  formNavigate(form, "/app/exercises");
  return h("section", { class: "card", id: "exercises", "data-testid": "exercises" },
    h("h1", {}, "Exercises"),
    form,
    exercises.length === 0 ? h("p", { class: "hint", id: "exercises-empty" }, "No exercise matches.")
      : h("ul", { class: "results", id: "exercise-results" }, exercises.map((e) => h("li", { "data-testid": "exercise-result", "data-id": e.id },
        h("a", { href: `/app/exercises/${encodeURIComponent(e.id)}`, class: "exercise-link" }, e.name),
        h("span", { class: "meta" }, [e.category, e.bodyPart, e.equipment].filter(Boolean).join(" · "))))));
}

export async function exerciseView({ params }) {
  const e = await api.exercise(params.id);
  return exerciseDetail(e, "/app/exercises");
}

// exerciseDetail shows an exercise and its instructions; back links to the search.
export function exerciseDetail(e, back) {
  return h("article", { class: "card", id: "exercise", "data-testid": "exercise", "data-id": e.id },
    back ? h("p", {}, h("a", { href: back, id: "exercise-back" }, "← Exercises")) : null,
    h("h1", { id: "exercise-name" }, e.name),
    dl([["Category", e.category, "exercise-category"], ["Body part", e.bodyPart, "exercise-body-part"], ["Equipment", e.equipment, "exercise-equipment"]]),
    h("h2", {}, "Instructions"),
    paragraphs(e.instructions, { id: "exercise-instructions", class: "instructions" }));
}
