// Keyboard labelling: "s" presses the first "Same story" button on the page, "d" the first "Different"
// (never while typing in a field).
document.addEventListener("keydown", function (event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  var tag = (event.target && event.target.tagName) || "";
  if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
  var button = document.querySelector('button[data-key="' + event.key.toLowerCase() + '"]');
  if (button) {
    event.preventDefault();
    button.click();
  }
});
