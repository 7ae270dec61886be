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

// fake/syncs/items.ts
var items_exports = {};
__export(items_exports, {
  default: () => items_default
});
module.exports = __toCommonJS(items_exports);
var z = __toESM(require("zod"), 1);
var Item = z.object({
  id: z.string(),
  title: z.string(),
  n: z.number()
});
function toItem(raw) {
  return {
    id: String(raw.id),
    title: raw.title ?? "",
    n: raw.n ?? 0
  };
}
var sync = {
  type: "sync",
  description: "Fetches every item of the fake API, page by page, resuming from the last saved cursor",
  version: "1.0.0",
  frequency: "every hour",
  autoStart: true,
  models: {
    Item
  },
  checkpoint: z.object({
    cursor: z.string()
  }),
  webhookSubscriptions: ["*"],
  exec: async (nango) => {
    const checkpoint = await nango.getCheckpoint();
    await nango.trackDeletesStart("Item");
    const params = {
      limit: "100"
    };
    if (checkpoint?.cursor) {
      params["cursor"] = checkpoint.cursor;
    }
    let saved = 0;
    for await (const page of nango.paginate({
      endpoint: "/items",
      params,
      retries: 3,
      paginate: {
        type: "cursor",
        cursor_name_in_request: "cursor",
        cursor_path_in_response: "next",
        response_path: "items",
        on_page: async ({
          nextPageParam
        }) => {
          if (typeof nextPageParam === "string") {
            await nango.saveCheckpoint({
              cursor: nextPageParam
            });
          }
        }
      }
    })) {
      const items = page.map(toItem);
      await nango.batchSave(items, "Item");
      saved += items.length;
    }
    await nango.trackDeletesEnd("Item");
    await nango.clearCheckpoint();
    await nango.log(`saved ${saved} items`);
  },
  onWebhook: async (nango, payload) => {
    const body = payload;
    if (!body.item) {
      await nango.log("webhook without an item", {
        level: "warn"
      });
      return;
    }
    if (body.type === "item.updated") {
      await nango.batchUpdate([{
        id: String(body.item.id),
        ...body.item.title ? {
          title: body.item.title
        } : {}
      }], "Item");
    } else {
      await nango.batchSave([toItem(body.item)], "Item");
    }
  }
};
var items_default = sync;
//# sourceMappingURL=data:application/json;base64,ewogICJ2ZXJzaW9uIjogMywKICAic291cmNlcyI6IFsiZmFrZS9zeW5jcy9pdGVtcy50cyJdLAogICJzb3VyY2VzQ29udGVudCI6IFsiaW1wb3J0IHsgY3JlYXRlU3luYyB9IGZyb20gJ25hbmdvJztcbmltcG9ydCAqIGFzIHogZnJvbSAnem9kJztcbmNvbnN0IEl0ZW0gPSB6Lm9iamVjdCh7XG4gIGlkOiB6LnN0cmluZygpLFxuICB0aXRsZTogei5zdHJpbmcoKSxcbiAgbjogei5udW1iZXIoKVxufSk7XG50eXBlIEl0ZW0gPSB6LmluZmVyPHR5cGVvZiBJdGVtPjtcbmludGVyZmFjZSBSYXdJdGVtIHtcbiAgaWQ6IHN0cmluZyB8IG51bWJlcjtcbiAgdGl0bGU/OiBzdHJpbmc7XG4gIG4/OiBudW1iZXI7XG59XG5mdW5jdGlvbiB0b0l0ZW0ocmF3OiBSYXdJdGVtKTogSXRlbSB7XG4gIHJldHVybiB7XG4gICAgaWQ6IFN0cmluZyhyYXcuaWQpLFxuICAgIHRpdGxlOiByYXcudGl0bGUgPz8gJycsXG4gICAgbjogcmF3Lm4gPz8gMFxuICB9O1xufVxuY29uc3Qgc3luYyA9IHtcbiAgdHlwZTogXCJzeW5jXCIsXG4gIGRlc2NyaXB0aW9uOiAnRmV0Y2hlcyBldmVyeSBpdGVtIG9mIHRoZSBmYWtlIEFQSSwgcGFnZSBieSBwYWdlLCByZXN1bWluZyBmcm9tIHRoZSBsYXN0IHNhdmVkIGN1cnNvcicsXG4gIHZlcnNpb246ICcxLjAuMCcsXG4gIGZyZXF1ZW5jeTogJ2V2ZXJ5IGhvdXInLFxuICBhdXRvU3RhcnQ6IHRydWUsXG4gIG1vZGVsczoge1xuICAgIEl0ZW1cbiAgfSxcbiAgY2hlY2twb2ludDogei5vYmplY3Qoe1xuICAgIGN1cnNvcjogei5zdHJpbmcoKVxuICB9KSxcbiAgd2ViaG9va1N1YnNjcmlwdGlvbnM6IFsnKiddLFxuICBleGVjOiBhc3luYyBuYW5nbyA9PiB7XG4gICAgY29uc3QgY2hlY2twb2ludCA9IGF3YWl0IG5hbmdvLmdldENoZWNrcG9pbnQoKTtcbiAgICBhd2FpdCBuYW5nby50cmFja0RlbGV0ZXNTdGFydCgnSXRlbScpO1xuICAgIGNvbnN0IHBhcmFtczogUmVjb3JkPHN0cmluZywgc3RyaW5nPiA9IHtcbiAgICAgIGxpbWl0OiAnMTAwJ1xuICAgIH07XG4gICAgaWYgKGNoZWNrcG9pbnQ/LmN1cnNvcikge1xuICAgICAgcGFyYW1zWydjdXJzb3InXSA9IGNoZWNrcG9pbnQuY3Vyc29yO1xuICAgIH1cbiAgICBsZXQgc2F2ZWQgPSAwO1xuICAgIGZvciBhd2FpdCAoY29uc3QgcGFnZSBvZiBuYW5nby5wYWdpbmF0ZTxSYXdJdGVtPih7XG4gICAgICBlbmRwb2ludDogJy9pdGVtcycsXG4gICAgICBwYXJhbXMsXG4gICAgICByZXRyaWVzOiAzLFxuICAgICAgcGFnaW5hdGU6IHtcbiAgICAgICAgdHlwZTogJ2N1cnNvcicsXG4gICAgICAgIGN1cnNvcl9uYW1lX2luX3JlcXVlc3Q6ICdjdXJzb3InLFxuICAgICAgICBjdXJzb3JfcGF0aF9pbl9yZXNwb25zZTogJ25leHQnLFxuICAgICAgICByZXNwb25zZV9wYXRoOiAnaXRlbXMnLFxuICAgICAgICBvbl9wYWdlOiBhc3luYyAoe1xuICAgICAgICAgIG5leHRQYWdlUGFyYW1cbiAgICAgICAgfSkgPT4ge1xuICAgICAgICAgIGlmICh0eXBlb2YgbmV4dFBhZ2VQYXJhbSA9PT0gJ3N0cmluZycpIHtcbiAgICAgICAgICAgIGF3YWl0IG5hbmdvLnNhdmVDaGVja3BvaW50KHtcbiAgICAgICAgICAgICAgY3Vyc29yOiBuZXh0UGFnZVBhcmFtXG4gICAgICAgICAgICB9KTtcbiAgICAgICAgICB9XG4gICAgICAgIH1cbiAgICAgIH1cbiAgICB9KSkge1xuICAgICAgY29uc3QgaXRlbXMgPSBwYWdlLm1hcCh0b0l0ZW0pO1xuICAgICAgYXdhaXQgbmFuZ28uYmF0Y2hTYXZlKGl0ZW1zLCAnSXRlbScpO1xuICAgICAgc2F2ZWQgKz0gaXRlbXMubGVuZ3RoO1xuICAgIH1cbiAgICBhd2FpdCBuYW5nby50cmFja0RlbGV0ZXNFbmQoJ0l0ZW0nKTtcbiAgICBhd2FpdCBuYW5nby5jbGVhckNoZWNrcG9pbnQoKTtcbiAgICBhd2FpdCBuYW5nby5sb2coYHNhdmVkICR7c2F2ZWR9IGl0ZW1zYCk7XG4gIH0sXG4gIG9uV2ViaG9vazogYXN5bmMgKG5hbmdvLCBwYXlsb2FkKSA9PiB7XG4gICAgY29uc3QgYm9keSA9IHBheWxvYWQgYXMge1xuICAgICAgdHlwZT86IHN0cmluZztcbiAgICAgIGl0ZW0/OiBSYXdJdGVtO1xuICAgIH07XG4gICAgaWYgKCFib2R5Lml0ZW0pIHtcbiAgICAgIGF3YWl0IG5hbmdvLmxvZygnd2ViaG9vayB3aXRob3V0IGFuIGl0ZW0nLCB7XG4gICAgICAgIGxldmVsOiAnd2FybidcbiAgICAgIH0pO1xuICAgICAgcmV0dXJuO1xuICAgIH1cbiAgICBpZiAoYm9keS50eXBlID09PSAnaXRlbS51cGRhdGVkJykge1xuICAgICAgYXdhaXQgbmFuZ28uYmF0Y2hVcGRhdGUoW3tcbiAgICAgICAgaWQ6IFN0cmluZyhib2R5Lml0ZW0uaWQpLFxuICAgICAgICAuLi4oYm9keS5pdGVtLnRpdGxlID8ge1xuICAgICAgICAgIHRpdGxlOiBib2R5Lml0ZW0udGl0bGVcbiAgICAgICAgfSA6IHt9KVxuICAgICAgfV0sICdJdGVtJyk7XG4gICAgfSBlbHNlIHtcbiAgICAgIGF3YWl0IG5hbmdvLmJhdGNoU2F2ZShbdG9JdGVtKGJvZHkuaXRlbSldLCAnSXRlbScpO1xuICAgIH1cbiAgfVxufTtcbmV4cG9ydCB0eXBlIE5hbmdvU3luY0xvY2FsID0gUGFyYW1ldGVyczwodHlwZW9mIHN5bmMpWydleGVjJ10+WzBdO1xuZXhwb3J0IGRlZmF1bHQgc3luYzsiXSwKICAibWFwcGluZ3MiOiAiOzs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7QUFBQTtBQUFBO0FBQUE7QUFBQTtBQUFBO0FBQ0EsUUFBbUI7QUFDbkIsSUFBTSxPQUFTLFNBQU87QUFBQSxFQUNwQixJQUFNLFNBQU87QUFBQSxFQUNiLE9BQVMsU0FBTztBQUFBLEVBQ2hCLEdBQUssU0FBTztBQUNkLENBQUM7QUFPRCxTQUFTLE9BQU8sS0FBb0I7QUFDbEMsU0FBTztBQUFBLElBQ0wsSUFBSSxPQUFPLElBQUksRUFBRTtBQUFBLElBQ2pCLE9BQU8sSUFBSSxTQUFTO0FBQUEsSUFDcEIsR0FBRyxJQUFJLEtBQUs7QUFBQSxFQUNkO0FBQ0Y7QUFDQSxJQUFNLE9BQU87QUFBQSxFQUNYLE1BQU07QUFBQSxFQUNOLGFBQWE7QUFBQSxFQUNiLFNBQVM7QUFBQSxFQUNULFdBQVc7QUFBQSxFQUNYLFdBQVc7QUFBQSxFQUNYLFFBQVE7QUFBQSxJQUNOO0FBQUEsRUFDRjtBQUFBLEVBQ0EsWUFBYyxTQUFPO0FBQUEsSUFDbkIsUUFBVSxTQUFPO0FBQUEsRUFDbkIsQ0FBQztBQUFBLEVBQ0Qsc0JBQXNCLENBQUMsR0FBRztBQUFBLEVBQzFCLE1BQU0sT0FBTSxVQUFTO0FBQ25CLFVBQU0sYUFBYSxNQUFNLE1BQU0sY0FBYztBQUM3QyxVQUFNLE1BQU0sa0JBQWtCLE1BQU07QUFDcEMsVUFBTSxTQUFpQztBQUFBLE1BQ3JDLE9BQU87QUFBQSxJQUNUO0FBQ0EsUUFBSSxZQUFZLFFBQVE7QUFDdEIsYUFBTyxRQUFRLElBQUksV0FBVztBQUFBLElBQ2hDO0FBQ0EsUUFBSSxRQUFRO0FBQ1oscUJBQWlCLFFBQVEsTUFBTSxTQUFrQjtBQUFBLE1BQy9DLFVBQVU7QUFBQSxNQUNWO0FBQUEsTUFDQSxTQUFTO0FBQUEsTUFDVCxVQUFVO0FBQUEsUUFDUixNQUFNO0FBQUEsUUFDTix3QkFBd0I7QUFBQSxRQUN4Qix5QkFBeUI7QUFBQSxRQUN6QixlQUFlO0FBQUEsUUFDZixTQUFTLE9BQU87QUFBQSxVQUNkO0FBQUEsUUFDRixNQUFNO0FBQ0osY0FBSSxPQUFPLGtCQUFrQixVQUFVO0FBQ3JDLGtCQUFNLE1BQU0sZUFBZTtBQUFBLGNBQ3pCLFFBQVE7QUFBQSxZQUNWLENBQUM7QUFBQSxVQUNIO0FBQUEsUUFDRjtBQUFBLE1BQ0Y7QUFBQSxJQUNGLENBQUMsR0FBRztBQUNGLFlBQU0sUUFBUSxLQUFLLElBQUksTUFBTTtBQUM3QixZQUFNLE1BQU0sVUFBVSxPQUFPLE1BQU07QUFDbkMsZUFBUyxNQUFNO0FBQUEsSUFDakI7QUFDQSxVQUFNLE1BQU0sZ0JBQWdCLE1BQU07QUFDbEMsVUFBTSxNQUFNLGdCQUFnQjtBQUM1QixVQUFNLE1BQU0sSUFBSSxTQUFTLEtBQUssUUFBUTtBQUFBLEVBQ3hDO0FBQUEsRUFDQSxXQUFXLE9BQU8sT0FBTyxZQUFZO0FBQ25DLFVBQU0sT0FBTztBQUliLFFBQUksQ0FBQyxLQUFLLE1BQU07QUFDZCxZQUFNLE1BQU0sSUFBSSwyQkFBMkI7QUFBQSxRQUN6QyxPQUFPO0FBQUEsTUFDVCxDQUFDO0FBQ0Q7QUFBQSxJQUNGO0FBQ0EsUUFBSSxLQUFLLFNBQVMsZ0JBQWdCO0FBQ2hDLFlBQU0sTUFBTSxZQUFZLENBQUM7QUFBQSxRQUN2QixJQUFJLE9BQU8sS0FBSyxLQUFLLEVBQUU7QUFBQSxRQUN2QixHQUFJLEtBQUssS0FBSyxRQUFRO0FBQUEsVUFDcEIsT0FBTyxLQUFLLEtBQUs7QUFBQSxRQUNuQixJQUFJLENBQUM7QUFBQSxNQUNQLENBQUMsR0FBRyxNQUFNO0FBQUEsSUFDWixPQUFPO0FBQ0wsWUFBTSxNQUFNLFVBQVUsQ0FBQyxPQUFPLEtBQUssSUFBSSxDQUFDLEdBQUcsTUFBTTtBQUFBLElBQ25EO0FBQUEsRUFDRjtBQUNGO0FBRUEsSUFBTyxnQkFBUTsiLAogICJuYW1lcyI6IFtdCn0K
