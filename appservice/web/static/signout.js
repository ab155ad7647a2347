// Posts the directory's sign-out form: the page includes this script only when the
// person's own browser or the service's own page asked for it, never another site.
document.getElementById("directory-signout-form").submit();
