// Package svgsafe rebuilds an SVG document from an allow-list of
// elements and attributes, so that an image served from the same origin
// as an API can run nothing and load nothing.
//
// [Clean] parses the document as XML and writes back only:
//
//   - the root <svg> (with the SVG namespace, viewBox, width and height);
//   - shapes, paths and their grouping (g, defs, use, symbol, clipPath,
//     mask, pattern), gradients and their stops, and the filter primitives
//     that draw shadows and blends (never feImage, which loads a picture);
//   - presentation and geometry attributes, id, and a style attribute only
//     when each of its declarations is a presentation property with a plain
//     value.
//
// Everything else is dropped and reported: script, foreignObject, style
// elements, image, text, animation, event attributes (on*), attributes of
// other namespaces, processing instructions, comments and DOCTYPE. A
// reference (href, xlink:href, or url(...) in a value) must point to a
// fragment of the same document (#id); any other reference drops its
// attribute. The output is canonical: Clean of a clean document returns it
// unchanged with nothing dropped, which is how a stored SVG is checked.
package svgsafe
