// The workout editor (/app/workouts/{id}): title, notes and the exercises with their dose,
// added from the catalogue, reordered and removed, saved in one PUT; and the export of the
// plan as a PDF to a case, with the case's exports. A template is shown read-only, with a
// button that makes a plan from it.

import { h, field, formatDate, replace, dose, paragraphs } from "../dom.js";
import { api, maxCaseId } from "../api.js";
import { state, personName } from "../state.js";
import { createWorkout, exportWorkout, workoutShown } from "../actions.js";
import { action, showError } from "./common.js";
import { t, parts, number } from "../i18n.js";

// itemOf is the editor's model of one exercise of a workout answer.
function itemOf(e) {
  return {
    exerciseId: e.exerciseId, name: e.name, instructions: e.instructions || "",
    sets: e.sets || 0, reps: e.reps || 0, holdSeconds: e.holdSeconds || 0,
    load: e.load || "", restSeconds: e.restSeconds || 0, note: e.note || "",
  };
}

export async function editorView({ params, data }) {
  const w = data && String(data.id) === String(params.id) ? data : await api.workout(params.id);
  workoutShown(w);
  return w.template ? templateView(w) : editor(w);
}

function header(w) {
  return h("p", { class: "meta", id: "workout-meta" },
    w.template ? t("editor.template") : w.personId
      ? parts("editor.for", { name: h("a", { href: `/app/persons/${encodeURIComponent(w.personId)}`, id: "workout-executor" }, w.executor || `#${w.personId}`) })
      : t("editor.nobody"),
    w.owner ? t("editor.by", { name: w.owner }) : "",
    w.lastChangedAt ? t("editor.changed", { date: formatDate(w.lastChangedAt) }) : "");
}

function templateView(w) {
  const focus = state.status && state.status.person;
  const msg = h("div", { class: "slot" });
  return h("article", { class: "card", id: "workout", "data-testid": "workout", "data-id": w.id },
    h("h1", { id: "workout-title" }, w.name),
    header(w),
    w.description ? paragraphs(w.description, { id: "workout-notes" }) : null,
    msg,
    focus ? action(h("button", { type: "button", id: "template-use" }, t("templates.use_for", { name: personName(focus) })), msg,
      () => createWorkout({ personId: focus.id, templateId: w.id })) : h("p", { class: "hint" }, t("editor.use_hint")),
    h("ol", { class: "plan", id: "workout-items" }, (w.exercises || []).map((e) => h("li", { "data-testid": "workout-item" },
      h("h2", {}, h("a", { href: `/app/exercises/${encodeURIComponent(e.exerciseId)}` }, e.name)),
      h("p", { class: "dose" }, dose(e)), e.note ? h("p", { class: "note" }, e.note) : null))));
}

function numberInput(id, label, value, onInput, max = 10000) {
  const input = h("input", { id, type: "number", min: 0, max, step: 1, inputmode: "numeric", value: value || "" });
  input.addEventListener("input", () => onInput(Math.max(0, Math.trunc(Number(input.value) || 0))));
  return field(label, input);
}

function textInput(id, label, value, onInput, max = 200) {
  const input = h("input", { id, maxlength: max, value: value || "" });
  input.addEventListener("input", () => onInput(input.value));
  return field(label, input);
}

function editor(w) {
  let items = (w.exercises || []).map(itemOf);
  let current = w;
  const msg = h("div", { class: "slot", id: "editor-message" });
  const dirtyNote = h("span", { class: "hint", id: "editor-dirty", hidden: true }, t("editor.unsaved"));
  const markDirty = () => { dirtyNote.hidden = false; };
  const title = h("input", { id: "workout-title-input", name: "title", maxlength: 200, required: true, value: w.name || "" });
  const notes = h("textarea", { id: "workout-notes-input", name: "notes", rows: 3, maxlength: 4000 }, w.description || "");
  title.addEventListener("input", markDirty);
  notes.addEventListener("input", markDirty);
  const list = h("ol", { class: "items", id: "editor-items" });
  const heading = h("h1", { id: "workout-title" }, w.name || t("editor.untitled"));

  const move = (i, by) => {
    const j = i + by;
    if (j < 0 || j >= items.length) return;
    [items[i], items[j]] = [items[j], items[i]];
    markDirty();
    draw();
    list.querySelector(`[data-index="${j}"] .move-${by < 0 ? "up" : "down"}`)?.focus();
  };
  function draw() {
    if (items.length === 0) {
      replace(list, h("li", { class: "hint", id: "editor-items-empty" }, t("editor.no_items")));
      return;
    }
    replace(list, items.map((it, i) => {
      const set = (k) => (v) => { it[k] = v; markDirty(); };
      const n = i + 1;
      return h("li", { class: "item", "data-testid": "editor-item", "data-index": i, "data-exercise-id": it.exerciseId },
        h("div", { class: "item-head" },
          h("h3", { id: `item-${n}-name` }, `${n}. `, h("a", { href: `/app/exercises/${encodeURIComponent(it.exerciseId)}` }, it.name)),
          h("span", { class: "buttons" },
            h("button", { type: "button", class: "small secondary move-up", "aria-label": t("editor.move_up", { name: it.name }), disabled: i === 0, on: { click: () => move(i, -1) } }, t("editor.up")),
            h("button", { type: "button", class: "small secondary move-down", "aria-label": t("editor.move_down", { name: it.name }), disabled: i === items.length - 1, on: { click: () => move(i, 1) } }, t("editor.down")),
            h("button", { type: "button", class: "small danger remove", "aria-label": t("editor.remove_label", { name: it.name }), on: { click: () => { items.splice(i, 1); markDirty(); draw(); } } }, t("editor.remove")))),
        h("div", { class: "dose-fields" },
          numberInput(`item-${n}-sets`, t("editor.sets"), it.sets, set("sets"), 100),
          numberInput(`item-${n}-reps`, t("editor.reps"), it.reps, set("reps"), 1000),
          numberInput(`item-${n}-hold`, t("editor.hold"), it.holdSeconds, set("holdSeconds"), 3600),
          textInput(`item-${n}-load`, t("editor.load"), it.load, set("load"), 64),
          numberInput(`item-${n}-rest`, t("editor.rest"), it.restSeconds, set("restSeconds"), 3600)),
        textInput(`item-${n}-note`, t("editor.note"), it.note, set("note"), 500));
    }));
  }
  draw();

  const save = async () => {
    const body = {
      title: title.value.trim(), notes: notes.value,
      items: items.map(({ exerciseId, sets, reps, holdSeconds, load, restSeconds, note }) => ({ exerciseId, sets, reps, holdSeconds, load, restSeconds, note })),
    };
    current = await api.updateWorkout(w.id, body);
    items = (current.exercises || []).map(itemOf);
    draw();
    dirtyNote.hidden = true;
    state.openWorkout = current;
    replace(heading, current.name || t("editor.untitled"));
    replace(msg, h("p", { class: "info", id: "editor-saved" }, t("editor.saved")));
  };
  const saveButton = h("button", { type: "submit", id: "workout-save" }, t("editor.save"));
  const form = h("form", { id: "workout-form", class: "editor" },
    field(t("plan.title"), title), field(t("editor.notes"), notes),
    h("h2", {}, t("editor.exercises")), list,
    h("div", { class: "actions" }, saveButton, dirtyNote), msg);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    replace(msg);
    saveButton.disabled = true;
    try {
      await save();
    } catch (e) {
      showError(msg, e);
    } finally {
      saveButton.disabled = false;
    }
  });

  const add = (e) => {
    items.push(itemOf({ exerciseId: e.id, name: e.name, instructions: e.instructions, sets: 3, reps: 10 }));
    markDirty();
    draw();
  };

  return h("div", { class: "editor-page" },
    h("article", { class: "card", id: "workout", "data-testid": "workout", "data-id": w.id },
      heading,
      header(w),
      form),
    addPanel(add),
    exportPanel(w, () => (dirtyNote.hidden ? null : save())));
}

// addPanel searches the catalogue and adds an exercise to the plan.
function addPanel(add) {
  const q = h("input", { id: "add-exercise-q", name: "q", type: "search", placeholder: t("add.placeholder") });
  const results = h("ul", { class: "results", id: "add-exercise-results" });
  const msg = h("div", { class: "slot" });
  const search = async () => {
    replace(msg);
    const { exercises = [] } = await api.exercises({ q: q.value.trim(), limit: 25 });
    replace(results, exercises.length === 0 ? h("li", { class: "hint" }, t("add.none"))
      : exercises.map((e) => h("li", { "data-testid": "add-exercise-result", "data-id": e.id },
        h("span", { class: "name" }, e.name), " ",
        h("span", { class: "meta" }, [e.category, e.bodyPart, e.equipment].filter(Boolean).join(" · ")), " ",
        h("button", { type: "button", class: "small", "data-testid": "add-exercise", "data-id": e.id, "aria-label": t("add.label", { name: e.name }), on: { click: () => add(e) } }, t("add.add")))));
  };
  const button = h("button", { type: "submit", id: "add-exercise-search" }, t("search.submit"));
  const form = h("form", { class: "search", id: "add-exercise-form", role: "search" }, field(t("add.find"), q), button);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    search().catch((e) => showError(msg, e));
  });
  return h("section", { class: "card", id: "add-exercise", "aria-labelledby": "add-exercise-heading" },
    h("h2", { id: "add-exercise-heading" }, t("add.title")), form, msg, results);
}

// exportPanel exports the saved plan to a case and lists the case's exports.
function exportPanel(w, saveFirst) {
  const caseInput = h("input", { id: "export-case-id", name: "caseId", maxlength: maxCaseId, value: (state.status && state.status.caseId) || "", placeholder: t("export.placeholder") });
  const list = h("div", { id: "case-exports-slot" });
  const msg = h("div", { class: "slot" });
  const show = async (caseId) => {
    if (!caseId) return;
    const { exports = [] } = await api.caseExports(caseId);
    replace(list, exportsTable(caseId, exports));
  };
  const button = action(h("button", { type: "button", id: "export-button" }, t("export.button")), msg, async () => {
    await saveFirst();
    const e = await exportWorkout(w.id, caseInput.value.trim());
    replace(msg, h("p", { class: "info", id: "export-done" }, t("export.done", { file: e.filename, caseId: e.caseId })));
    await show(e.caseId);
  });
  show(caseInput.value).catch((e) => showError(msg, e));
  const section = h("section", { class: "card", id: "export", "aria-labelledby": "export-heading" },
    h("h2", { id: "export-heading" }, t("export.button")),
    h("p", { class: "hint" }, t("export.hint")),
    h("div", { class: "inline" }, field(t("export.case_id"), caseInput), button), msg, list);
  // window.svcApp.exportWorkout tells the open editor, so its list shows the new export.
  section.addEventListener("exported", (event) => {
    show(event.detail.caseId).catch((e) => showError(msg, e));
  });
  return section;
}

// exportsTable lists a case's exports with their download links.
export function exportsTable(caseId, exports) {
  if (exports.length === 0) return h("p", { class: "hint", id: "case-exports-empty" }, t("exports.none", { caseId }));
  return h("table", { class: "list", id: "case-exports" },
    h("caption", {}, parts("exports.caption", { caseId: h("code", {}, caseId) })),
    h("thead", {}, h("tr", {}, [t("exports.file"), t("exports.plan"), t("exports.created"), t("exports.by"), t("exports.size")].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, exports.map((e) => h("tr", { "data-testid": "case-export", "data-id": e.id },
      h("td", {}, h("a", { href: e.url || `/app/api/exports/${encodeURIComponent(e.id)}.pdf`, download: e.filename, class: "export-link" }, e.filename),
        h("br"), h("small", { class: "hash", title: `SHA-256 ${e.sha256}` }, `SHA-256 ${String(e.sha256 || "").slice(0, 12)}…`)),
      h("td", {}, h("a", { href: `/app/workouts/${encodeURIComponent(e.workoutId)}` }, `#${e.workoutId}`)),
      h("td", {}, formatDate(e.createdAt)),
      h("td", {}, e.createdBy || ""),
      h("td", { class: "num" }, e.size ? t("exports.kib", { n: number(Math.max(1, Math.round(e.size / 1024))) }) : "")))));
}
