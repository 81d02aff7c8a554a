/** The table both key pages list keys in (all-keys.ts for an admin, my-keys.ts for an owner): one markup, their own caption and columns. */
import { html } from '../ui.js';

/** `columns` are the header cells in order; the last, the row's buttons, has only a hidden label. */
export function KeyTable({ caption, columns, children }: { caption: string; columns: readonly string[]; children: unknown }) {
  return html`<div class="table-wrap">
    <table>
      <caption class="visually-hidden">
        ${caption}
      </caption>
      <thead>
        <tr>
          ${columns.map((name) => html`<th scope="col">${name}</th>`)}
          <th scope="col"><span class="visually-hidden">Actions</span></th>
        </tr>
      </thead>
      <tbody>
        ${children}
      </tbody>
    </table>
  </div>`;
}
