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

// fake/actions/whoami.ts
var whoami_exports = {};
__export(whoami_exports, {
  default: () => whoami_default
});
module.exports = __toCommonJS(whoami_exports);
var import_crypto = __toESM(require("crypto"), 1);
var z = __toESM(require("zod"), 1);
var action = {
  type: "action",
  description: "Describes the connection: its id, a hash of its metadata and the host of its API",
  version: "1.0.0",
  input: z.object({}),
  output: z.object({
    connectionId: z.string(),
    providerConfigKey: z.string(),
    metadataHash: z.string(),
    token: z.string(),
    host: z.string()
  }),
  metadata: z.object({
    team: z.string().optional(),
    baseUrl: z.string().optional()
  }),
  exec: async (nango) => {
    const connection = await nango.getConnection();
    const metadata = await nango.getMetadata();
    const metadataHash = import_crypto.default.createHash("sha256").update(JSON.stringify(metadata ?? {})).digest("hex");
    const token = Buffer.from(`${connection.connection_id}:${connection.provider_config_key}`).toString("base64");
    const url = new URL("/v1/me", metadata?.baseUrl ?? "https://api.example.com");
    url.searchParams.set("team", metadata?.team ?? "none");
    return {
      connectionId: connection.connection_id,
      providerConfigKey: connection.provider_config_key,
      metadataHash,
      token,
      host: url.host
    };
  }
};
var whoami_default = action;
//# sourceMappingURL=data:application/json;base64,ewogICJ2ZXJzaW9uIjogMywKICAic291cmNlcyI6IFsiZmFrZS9hY3Rpb25zL3dob2FtaS50cyJdLAogICJzb3VyY2VzQ29udGVudCI6IFsiaW1wb3J0IHsgY3JlYXRlQWN0aW9uIH0gZnJvbSAnbmFuZ28nO1xuaW1wb3J0IGNyeXB0byBmcm9tICdjcnlwdG8nO1xuaW1wb3J0ICogYXMgeiBmcm9tICd6b2QnO1xuY29uc3QgYWN0aW9uID0ge1xuICB0eXBlOiBcImFjdGlvblwiLFxuICBkZXNjcmlwdGlvbjogJ0Rlc2NyaWJlcyB0aGUgY29ubmVjdGlvbjogaXRzIGlkLCBhIGhhc2ggb2YgaXRzIG1ldGFkYXRhIGFuZCB0aGUgaG9zdCBvZiBpdHMgQVBJJyxcbiAgdmVyc2lvbjogJzEuMC4wJyxcbiAgaW5wdXQ6IHoub2JqZWN0KHt9KSxcbiAgb3V0cHV0OiB6Lm9iamVjdCh7XG4gICAgY29ubmVjdGlvbklkOiB6LnN0cmluZygpLFxuICAgIHByb3ZpZGVyQ29uZmlnS2V5OiB6LnN0cmluZygpLFxuICAgIG1ldGFkYXRhSGFzaDogei5zdHJpbmcoKSxcbiAgICB0b2tlbjogei5zdHJpbmcoKSxcbiAgICBob3N0OiB6LnN0cmluZygpXG4gIH0pLFxuICBtZXRhZGF0YTogei5vYmplY3Qoe1xuICAgIHRlYW06IHouc3RyaW5nKCkub3B0aW9uYWwoKSxcbiAgICBiYXNlVXJsOiB6LnN0cmluZygpLm9wdGlvbmFsKClcbiAgfSksXG4gIGV4ZWM6IGFzeW5jIG5hbmdvID0+IHtcbiAgICBjb25zdCBjb25uZWN0aW9uID0gYXdhaXQgbmFuZ28uZ2V0Q29ubmVjdGlvbigpO1xuICAgIGNvbnN0IG1ldGFkYXRhID0gYXdhaXQgbmFuZ28uZ2V0TWV0YWRhdGEoKTtcbiAgICBjb25zdCBtZXRhZGF0YUhhc2ggPSBjcnlwdG8uY3JlYXRlSGFzaCgnc2hhMjU2JykudXBkYXRlKEpTT04uc3RyaW5naWZ5KG1ldGFkYXRhID8/IHt9KSkuZGlnZXN0KCdoZXgnKTtcbiAgICBjb25zdCB0b2tlbiA9IEJ1ZmZlci5mcm9tKGAke2Nvbm5lY3Rpb24uY29ubmVjdGlvbl9pZH06JHtjb25uZWN0aW9uLnByb3ZpZGVyX2NvbmZpZ19rZXl9YCkudG9TdHJpbmcoJ2Jhc2U2NCcpO1xuICAgIGNvbnN0IHVybCA9IG5ldyBVUkwoJy92MS9tZScsIG1ldGFkYXRhPy5iYXNlVXJsID8/ICdodHRwczovL2FwaS5leGFtcGxlLmNvbScpO1xuICAgIHVybC5zZWFyY2hQYXJhbXMuc2V0KCd0ZWFtJywgbWV0YWRhdGE/LnRlYW0gPz8gJ25vbmUnKTtcbiAgICByZXR1cm4ge1xuICAgICAgY29ubmVjdGlvbklkOiBjb25uZWN0aW9uLmNvbm5lY3Rpb25faWQsXG4gICAgICBwcm92aWRlckNvbmZpZ0tleTogY29ubmVjdGlvbi5wcm92aWRlcl9jb25maWdfa2V5LFxuICAgICAgbWV0YWRhdGFIYXNoLFxuICAgICAgdG9rZW4sXG4gICAgICBob3N0OiB1cmwuaG9zdFxuICAgIH07XG4gIH1cbn07XG5leHBvcnQgZGVmYXVsdCBhY3Rpb247Il0sCiAgIm1hcHBpbmdzIjogIjs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7O0FBQUE7QUFBQTtBQUFBO0FBQUE7QUFBQTtBQUNBLG9CQUFtQjtBQUNuQixRQUFtQjtBQUNuQixJQUFNLFNBQVM7QUFBQSxFQUNiLE1BQU07QUFBQSxFQUNOLGFBQWE7QUFBQSxFQUNiLFNBQVM7QUFBQSxFQUNULE9BQVMsU0FBTyxDQUFDLENBQUM7QUFBQSxFQUNsQixRQUFVLFNBQU87QUFBQSxJQUNmLGNBQWdCLFNBQU87QUFBQSxJQUN2QixtQkFBcUIsU0FBTztBQUFBLElBQzVCLGNBQWdCLFNBQU87QUFBQSxJQUN2QixPQUFTLFNBQU87QUFBQSxJQUNoQixNQUFRLFNBQU87QUFBQSxFQUNqQixDQUFDO0FBQUEsRUFDRCxVQUFZLFNBQU87QUFBQSxJQUNqQixNQUFRLFNBQU8sRUFBRSxTQUFTO0FBQUEsSUFDMUIsU0FBVyxTQUFPLEVBQUUsU0FBUztBQUFBLEVBQy9CLENBQUM7QUFBQSxFQUNELE1BQU0sT0FBTSxVQUFTO0FBQ25CLFVBQU0sYUFBYSxNQUFNLE1BQU0sY0FBYztBQUM3QyxVQUFNLFdBQVcsTUFBTSxNQUFNLFlBQVk7QUFDekMsVUFBTSxlQUFlLGNBQUFBLFFBQU8sV0FBVyxRQUFRLEVBQUUsT0FBTyxLQUFLLFVBQVUsWUFBWSxDQUFDLENBQUMsQ0FBQyxFQUFFLE9BQU8sS0FBSztBQUNwRyxVQUFNLFFBQVEsT0FBTyxLQUFLLEdBQUcsV0FBVyxhQUFhLElBQUksV0FBVyxtQkFBbUIsRUFBRSxFQUFFLFNBQVMsUUFBUTtBQUM1RyxVQUFNLE1BQU0sSUFBSSxJQUFJLFVBQVUsVUFBVSxXQUFXLHlCQUF5QjtBQUM1RSxRQUFJLGFBQWEsSUFBSSxRQUFRLFVBQVUsUUFBUSxNQUFNO0FBQ3JELFdBQU87QUFBQSxNQUNMLGNBQWMsV0FBVztBQUFBLE1BQ3pCLG1CQUFtQixXQUFXO0FBQUEsTUFDOUI7QUFBQSxNQUNBO0FBQUEsTUFDQSxNQUFNLElBQUk7QUFBQSxJQUNaO0FBQUEsRUFDRjtBQUNGO0FBQ0EsSUFBTyxpQkFBUTsiLAogICJuYW1lcyI6IFsiY3J5cHRvIl0KfQo=
