import { createAction } from 'nango';
import * as z from 'zod';

const action = createAction({
    description: 'Creates an item in the fake API',
    version: '1.0.0',
    input: z.object({
        title: z.string().min(1),
        n: z.number().optional()
    }),
    output: z.object({
        id: z.string(),
        title: z.string()
    }),

    exec: async (nango, input) => {
        if (input.title === 'boom') {
            throw new nango.ActionError({ message: 'boom refused', code: 'refused' });
        }
        const res = await nango.post<{ id: string | number; title: string }>({
            endpoint: '/items',
            data: { title: input.title, n: input.n ?? 0 },
            retries: 1
        });
        return { id: String(res.data.id), title: res.data.title };
    }
});

export type NangoActionLocal = Parameters<(typeof action)['exec']>[0];
export default action;
