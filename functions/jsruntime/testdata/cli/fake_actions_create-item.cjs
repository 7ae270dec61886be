"use strict";
var __create = Object.create;
var __defProp = Object.defineProperty;
var __getOwnPropDesc = Object.getOwnPropertyDescriptor;
var __getOwnPropNames = Object.getOwnPropertyNames;
var __getProtoOf = Object.getPrototypeOf;
var __hasOwnProp = Object.prototype.hasOwnProperty;
var __export = (target, all) => {
  for (var name in all)
    __defProp(target, name, { get: all[name], enumerable: true });
};
var __copyProps = (to, from, except, desc) => {
  if (from && typeof from === "object" || typeof from === "function") {
    for (let key of __getOwnPropNames(from))
      if (!__hasOwnProp.call(to, key) && key !== except)
        __defProp(to, key, { get: () => from[key], enumerable: !(desc = __getOwnPropDesc(from, key)) || desc.enumerable });
  }
  return to;
};
var __toESM = (mod, isNodeMode, target) => (target = mod != null ? __create(__getProtoOf(mod)) : {}, __copyProps(
  // If the importer is in node compatibility mode or this is not an ESM
  // file that has been converted to a CommonJS file using a Babel-
  // compatible transform (i.e. "__esModule" has not been set), then set
  // "default" to the CommonJS "module.exports" for node compatibility.
  isNodeMode || !mod || !mod.__esModule ? __defProp(target, "default", { value: mod, enumerable: true }) : target,
  mod
));
var __toCommonJS = (mod) => __copyProps(__defProp({}, "__esModule", { value: true }), mod);

// fake/actions/create-item.ts
var create_item_exports = {};
__export(create_item_exports, {
  default: () => create_item_default
});
module.exports = __toCommonJS(create_item_exports);
var z = __toESM(require("zod"), 1);
var action = {
  type: "action",
  description: "Creates an item in the fake API",
  version: "1.0.0",
  input: z.object({
    title: z.string().min(1),
    n: z.number().optional()
  }),
  output: z.object({
    id: z.string(),
    title: z.string()
  }),
  exec: async (nango, input) => {
    if (input.title === "boom") {
      throw new nango.ActionError({
        message: "boom refused",
        code: "refused"
      });
    }
    const res = await nango.post({
      endpoint: "/items",
      data: {
        title: input.title,
        n: input.n ?? 0
      },
      retries: 1
    });
    return {
      id: String(res.data.id),
      title: res.data.title
    };
  }
};
var create_item_default = action;
//# sourceMappingURL=data:application/json;base64,ewogICJ2ZXJzaW9uIjogMywKICAic291cmNlcyI6IFsiZmFrZS9hY3Rpb25zL2NyZWF0ZS1pdGVtLnRzIl0sCiAgInNvdXJjZXNDb250ZW50IjogWyJpbXBvcnQgeyBjcmVhdGVBY3Rpb24gfSBmcm9tICduYW5nbyc7XG5pbXBvcnQgKiBhcyB6IGZyb20gJ3pvZCc7XG5jb25zdCBhY3Rpb24gPSB7XG4gIHR5cGU6IFwiYWN0aW9uXCIsXG4gIGRlc2NyaXB0aW9uOiAnQ3JlYXRlcyBhbiBpdGVtIGluIHRoZSBmYWtlIEFQSScsXG4gIHZlcnNpb246ICcxLjAuMCcsXG4gIGlucHV0OiB6Lm9iamVjdCh7XG4gICAgdGl0bGU6IHouc3RyaW5nKCkubWluKDEpLFxuICAgIG46IHoubnVtYmVyKCkub3B0aW9uYWwoKVxuICB9KSxcbiAgb3V0cHV0OiB6Lm9iamVjdCh7XG4gICAgaWQ6IHouc3RyaW5nKCksXG4gICAgdGl0bGU6IHouc3RyaW5nKClcbiAgfSksXG4gIGV4ZWM6IGFzeW5jIChuYW5nbywgaW5wdXQpID0+IHtcbiAgICBpZiAoaW5wdXQudGl0bGUgPT09ICdib29tJykge1xuICAgICAgdGhyb3cgbmV3IG5hbmdvLkFjdGlvbkVycm9yKHtcbiAgICAgICAgbWVzc2FnZTogJ2Jvb20gcmVmdXNlZCcsXG4gICAgICAgIGNvZGU6ICdyZWZ1c2VkJ1xuICAgICAgfSk7XG4gICAgfVxuICAgIGNvbnN0IHJlcyA9IGF3YWl0IG5hbmdvLnBvc3Q8e1xuICAgICAgaWQ6IHN0cmluZyB8IG51bWJlcjtcbiAgICAgIHRpdGxlOiBzdHJpbmc7XG4gICAgfT4oe1xuICAgICAgZW5kcG9pbnQ6ICcvaXRlbXMnLFxuICAgICAgZGF0YToge1xuICAgICAgICB0aXRsZTogaW5wdXQudGl0bGUsXG4gICAgICAgIG46IGlucHV0Lm4gPz8gMFxuICAgICAgfSxcbiAgICAgIHJldHJpZXM6IDFcbiAgICB9KTtcbiAgICByZXR1cm4ge1xuICAgICAgaWQ6IFN0cmluZyhyZXMuZGF0YS5pZCksXG4gICAgICB0aXRsZTogcmVzLmRhdGEudGl0bGVcbiAgICB9O1xuICB9XG59O1xuZXhwb3J0IHR5cGUgTmFuZ29BY3Rpb25Mb2NhbCA9IFBhcmFtZXRlcnM8KHR5cGVvZiBhY3Rpb24pWydleGVjJ10+WzBdO1xuZXhwb3J0IGRlZmF1bHQgYWN0aW9uOyJdLAogICJtYXBwaW5ncyI6ICI7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7OztBQUFBO0FBQUE7QUFBQTtBQUFBO0FBQUE7QUFDQSxRQUFtQjtBQUNuQixJQUFNLFNBQVM7QUFBQSxFQUNiLE1BQU07QUFBQSxFQUNOLGFBQWE7QUFBQSxFQUNiLFNBQVM7QUFBQSxFQUNULE9BQVMsU0FBTztBQUFBLElBQ2QsT0FBUyxTQUFPLEVBQUUsSUFBSSxDQUFDO0FBQUEsSUFDdkIsR0FBSyxTQUFPLEVBQUUsU0FBUztBQUFBLEVBQ3pCLENBQUM7QUFBQSxFQUNELFFBQVUsU0FBTztBQUFBLElBQ2YsSUFBTSxTQUFPO0FBQUEsSUFDYixPQUFTLFNBQU87QUFBQSxFQUNsQixDQUFDO0FBQUEsRUFDRCxNQUFNLE9BQU8sT0FBTyxVQUFVO0FBQzVCLFFBQUksTUFBTSxVQUFVLFFBQVE7QUFDMUIsWUFBTSxJQUFJLE1BQU0sWUFBWTtBQUFBLFFBQzFCLFNBQVM7QUFBQSxRQUNULE1BQU07QUFBQSxNQUNSLENBQUM7QUFBQSxJQUNIO0FBQ0EsVUFBTSxNQUFNLE1BQU0sTUFBTSxLQUdyQjtBQUFBLE1BQ0QsVUFBVTtBQUFBLE1BQ1YsTUFBTTtBQUFBLFFBQ0osT0FBTyxNQUFNO0FBQUEsUUFDYixHQUFHLE1BQU0sS0FBSztBQUFBLE1BQ2hCO0FBQUEsTUFDQSxTQUFTO0FBQUEsSUFDWCxDQUFDO0FBQ0QsV0FBTztBQUFBLE1BQ0wsSUFBSSxPQUFPLElBQUksS0FBSyxFQUFFO0FBQUEsTUFDdEIsT0FBTyxJQUFJLEtBQUs7QUFBQSxJQUNsQjtBQUFBLEVBQ0Y7QUFDRjtBQUVBLElBQU8sc0JBQVE7IiwKICAibmFtZXMiOiBbXQp9Cg==
