// What a person reads of a failure.

import { t, has } from "./i18n.js";

// errorText is the title of the failure's code in the page's language, else its message:
// the API's detail is English, as documented for the partners' developers, and its code
// is stable in every language.
export function errorText(e) {
  if (e && e.code && has(`problem.title.${e.code}`)) return t(`problem.title.${e.code}`);
  return e && e.message ? e.message : String(e);
}
