import './fake/syncs/items.js';
import './fake/actions/create-item.js';
import './fake/actions/whoami.js';
import './fake/on-events/setup.js';
