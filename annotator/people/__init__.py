"""Who is acting and what they may do: roles and permissions, accounts and sign-in, browser
sessions, API tokens. Imports no other room."""
