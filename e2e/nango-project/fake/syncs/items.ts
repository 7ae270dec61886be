import { createSync } from 'nango';
import * as z from 'zod';

const Item = z.object({
    id: z.string(),
    title: z.string(),
    n: z.number()
});
type Item = z.infer<typeof Item>;

interface RawItem {
    id: string | number;
    title?: string;
    n?: number;
}

function toItem(raw: RawItem): Item {
    return { id: String(raw.id), title: raw.title ?? '', n: raw.n ?? 0 };
}

const sync = createSync({
    description: 'Fetches every item of the fake API, page by page, resuming from the last saved cursor',
    version: '1.0.0',
    frequency: 'every hour',
    autoStart: true,
    models: { Item },
    checkpoint: z.object({ cursor: z.string() }),
    webhookSubscriptions: ['*'],

    exec: async (nango) => {
        const checkpoint = await nango.getCheckpoint();
        await nango.trackDeletesStart('Item');

        const params: Record<string, string> = { limit: '100' };
        if (checkpoint?.cursor) {
            params['cursor'] = checkpoint.cursor;
        }
        let saved = 0;
        for await (const page of nango.paginate<RawItem>({
            endpoint: '/items',
            params,
            retries: 3,
            paginate: {
                type: 'cursor',
                cursor_name_in_request: 'cursor',
                cursor_path_in_response: 'next',
                response_path: 'items',
                on_page: async ({ nextPageParam }) => {
                    if (typeof nextPageParam === 'string') {
                        await nango.saveCheckpoint({ cursor: nextPageParam });
                    }
                }
            }
        })) {
            const items = page.map(toItem);
            await nango.batchSave(items, 'Item');
            saved += items.length;
        }

        await nango.trackDeletesEnd('Item');
        await nango.clearCheckpoint();
        await nango.log(`saved ${saved} items`);
    },

    onWebhook: async (nango, payload) => {
        const body = payload as { type?: string; item?: RawItem };
        if (!body.item) {
            await nango.log('webhook without an item', { level: 'warn' });
            return;
        }
        if (body.type === 'item.updated') {
            await nango.batchUpdate([{ id: String(body.item.id), ...(body.item.title ? { title: body.item.title } : {}) }], 'Item');
        } else {
            await nango.batchSave([toItem(body.item)], 'Item');
        }
    }
});

export type NangoSyncLocal = Parameters<(typeof sync)['exec']>[0];
export default sync;
