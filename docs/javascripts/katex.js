// Typesets the equations that pymdownx.arithmatex (generic mode) wraps in
// `.arithmatex` elements, on the first load and after every instant
// navigation of the Material theme.
document$.subscribe(function () {
  document.querySelectorAll(".arithmatex").forEach(function (element) {
    renderMathInElement(element, {
      delimiters: [
        { left: "\\(", right: "\\)", display: false },
        { left: "\\[", right: "\\]", display: true },
      ],
      throwOnError: false,
    });
  });
});
