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

// fake/on-events/setup.ts
var setup_exports = {};
__export(setup_exports, {
  default: () => setup_default,
  onEvent: () => onEvent
});
module.exports = __toCommonJS(setup_exports);
var z = __toESM(require("zod"), 1);
var onEvent = {
  type: "onEvent",
  event: "post-connection-creation",
  description: "Seeds the metadata of a new connection",
  metadata: z.object({
    team: z.string().optional(),
    setupAt: z.string(),
    runs: z.number()
  }),
  exec: async (nango) => {
    await nango.setMetadata({
      setupAt: (/* @__PURE__ */ new Date()).toISOString(),
      runs: 0
    });
    await nango.updateMetadata({
      runs: 1
    });
    await nango.log("connection set up", {
      level: "info"
    });
  }
};
var setup_default = onEvent;
// Annotate the CommonJS export names for ESM import in node:
0 && (module.exports = {
  onEvent
});
//# sourceMappingURL=data:application/json;base64,ewogICJ2ZXJzaW9uIjogMywKICAic291cmNlcyI6IFsiZmFrZS9vbi1ldmVudHMvc2V0dXAudHMiXSwKICAic291cmNlc0NvbnRlbnQiOiBbImltcG9ydCB7IGNyZWF0ZU9uRXZlbnQgfSBmcm9tICduYW5nbyc7XG5pbXBvcnQgKiBhcyB6IGZyb20gJ3pvZCc7XG5leHBvcnQgY29uc3Qgb25FdmVudCA9IHtcbiAgdHlwZTogXCJvbkV2ZW50XCIsXG4gIGV2ZW50OiAncG9zdC1jb25uZWN0aW9uLWNyZWF0aW9uJyxcbiAgZGVzY3JpcHRpb246ICdTZWVkcyB0aGUgbWV0YWRhdGEgb2YgYSBuZXcgY29ubmVjdGlvbicsXG4gIG1ldGFkYXRhOiB6Lm9iamVjdCh7XG4gICAgdGVhbTogei5zdHJpbmcoKS5vcHRpb25hbCgpLFxuICAgIHNldHVwQXQ6IHouc3RyaW5nKCksXG4gICAgcnVuczogei5udW1iZXIoKVxuICB9KSxcbiAgZXhlYzogYXN5bmMgbmFuZ28gPT4ge1xuICAgIGF3YWl0IG5hbmdvLnNldE1ldGFkYXRhKHtcbiAgICAgIHNldHVwQXQ6IG5ldyBEYXRlKCkudG9JU09TdHJpbmcoKSxcbiAgICAgIHJ1bnM6IDBcbiAgICB9KTtcbiAgICBhd2FpdCBuYW5nby51cGRhdGVNZXRhZGF0YSh7XG4gICAgICBydW5zOiAxXG4gICAgfSk7XG4gICAgYXdhaXQgbmFuZ28ubG9nKCdjb25uZWN0aW9uIHNldCB1cCcsIHtcbiAgICAgIGxldmVsOiAnaW5mbydcbiAgICB9KTtcbiAgfVxufTtcbmV4cG9ydCBkZWZhdWx0IG9uRXZlbnQ7Il0sCiAgIm1hcHBpbmdzIjogIjs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7O0FBQUE7QUFBQTtBQUFBO0FBQUE7QUFBQTtBQUFBO0FBQ0EsUUFBbUI7QUFDWixJQUFNLFVBQVU7QUFBQSxFQUNyQixNQUFNO0FBQUEsRUFDTixPQUFPO0FBQUEsRUFDUCxhQUFhO0FBQUEsRUFDYixVQUFZLFNBQU87QUFBQSxJQUNqQixNQUFRLFNBQU8sRUFBRSxTQUFTO0FBQUEsSUFDMUIsU0FBVyxTQUFPO0FBQUEsSUFDbEIsTUFBUSxTQUFPO0FBQUEsRUFDakIsQ0FBQztBQUFBLEVBQ0QsTUFBTSxPQUFNLFVBQVM7QUFDbkIsVUFBTSxNQUFNLFlBQVk7QUFBQSxNQUN0QixVQUFTLG9CQUFJLEtBQUssR0FBRSxZQUFZO0FBQUEsTUFDaEMsTUFBTTtBQUFBLElBQ1IsQ0FBQztBQUNELFVBQU0sTUFBTSxlQUFlO0FBQUEsTUFDekIsTUFBTTtBQUFBLElBQ1IsQ0FBQztBQUNELFVBQU0sTUFBTSxJQUFJLHFCQUFxQjtBQUFBLE1BQ25DLE9BQU87QUFBQSxJQUNULENBQUM7QUFBQSxFQUNIO0FBQ0Y7QUFDQSxJQUFPLGdCQUFROyIsCiAgIm5hbWVzIjogW10KfQo=
