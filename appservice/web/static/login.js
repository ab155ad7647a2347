// Submits the login form that carries the one-time code: a link fetched without a
// browser running scripts (a HEAD, a link preview, a mail scanner) does not use the code.
document.getElementById("login-form").submit();
