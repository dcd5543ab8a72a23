/**
 * A table of figures or records (`DataTable`): its caption for screen readers, headings with their scope, the rows
 * one column at a time, the words for none; numbers right-aligned. Wider than a phone, it scrolls sideways inside
 * its own focusable region named by the caption (the keyboard reaches what is out of sight), never the page.
 */
import type { ComponentChildren } from 'preact';
import { EmptyState } from './list.tsx';

export interface Column<T> {
  title: string;
  /** The heading for screen readers only (a column of buttons). */
  hideTitle?: boolean;
  /** Figures: right-aligned, never wrapped. */
  number?: boolean;
  /** The cell that names its row (a `th` with `scope="row"`). */
  rowHeader?: boolean;
  cell(row: T): ComponentChildren;
}

export function DataTable<T>(props: {
  caption: string;
  columns: ReadonlyArray<Column<T>>;
  rows: readonly T[];
  rowKey(row: T): string | number;
  /** Shown instead of the table when there are no rows. */
  empty?: ComponentChildren;
}) {
  if (props.rows.length === 0 && props.empty) return <EmptyState>{props.empty}</EmptyState>;
  const numeric = (column: Column<T>) => (column.number ? 'number' : undefined);
  return (
    <div class="table-scroll" role="region" aria-label={props.caption} tabIndex={0}>
      <table>
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((column) => (
              <th scope="col" key={column.title} class={numeric(column)}>
                {column.hideTitle ? <span class="visually-hidden">{column.title}</span> : column.title}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr key={props.rowKey(row)}>
              {props.columns.map((column) =>
                column.rowHeader ? (
                  <th scope="row" key={column.title} class={numeric(column)}>
                    {column.cell(row)}
                  </th>
                ) : (
                  <td key={column.title} class={numeric(column)}>
                    {column.cell(row)}
                  </td>
                ),
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
